"""The candidate panel and the decisions made in it (htmx fragments of the document page,
:mod:`webapp.curation.views`): the panel, a decision, undo, concept search, a concept's family, a mention added
or its span fixed.

Views parse input with a form, call one service, and render; the work is in services/ and selectors.py.
A decision answers with the refreshed panel plus out-of-band swaps of the document text and the status counts,
and an ``HX-Trigger`` event the keyboard script reacts to.
"""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET, require_POST

from webapp.core.decorators import curator_required, reader_required
from webapp.corpus.models import Document, Mention
from webapp.corpus.windows import window_at
from webapp.curation import selectors, services
from webapp.curation.forms import DecisionForm, SpanForm
from webapp.curation.models import Decision
from webapp.curation.views import document_context
from webapp.projects import access
from webapp.vocab.models import Concept
from webapp.vocab.selectors import MIN_QUERY_LENGTH, search_concepts


def _mention(request: HttpRequest, pk: int) -> Mention:
    """The mention, if the user may see it (GET) or decide on it (POST): projects restrict both (webapp.projects.access)."""
    mention = get_object_or_404(Mention.objects.select_related("document__collection__dictionary"), pk=pk)
    check = access.check_decide_document if request.method == "POST" else access.check_view_document
    check(request.user, mention.document)
    return mention


def _panel_response(
    request: HttpRequest,
    mention: Mention,
    *,
    status: int = 200,
    alert: str = "",
    alert_kind: str = "info",
    refresh_document: bool = False,
    trigger: dict[str, Any] | None = None,
    store: bool = False,
) -> HttpResponse:
    """The candidate panel. ``store``: a POST that changed the mention (added it, fixed its span, undid a decision)
    stores the ranking shown as its suggestions; a GET only reads (the ranking is kept in the process's cache)."""
    ranking = services.panel_ranking(mention)
    if store:
        services.store_ranking(mention, ranking)
    data = selectors.panel(mention, ranking)
    context = {"p": data, "alert": alert, "alert_kind": alert_kind}
    body = render_to_string("curation/_panel.html", context, request)
    services.prefetch_rest_of_document(mention, ranking)  # only now: the background thread must not slow this answer
    # Storing suggestions may turn a pending mention into a suggested one: the keyboard script recolours
    # that mention from the panel's data-status.
    if refresh_document:  # the part of the text the mention is in: the one the page shows
        doc_context = {**document_context(mention.document, window_at(mention.document, mention.start)), "oob": True}
        body += render_to_string("curation/document.html#document-text", doc_context, request)
        body += render_to_string("curation/document.html#status-counts", doc_context, request)
    response = HttpResponse(body, status=status)
    if trigger:
        response["HX-Trigger"] = json.dumps(trigger)
    return response


@require_GET
@reader_required
def panel(request: HttpRequest, pk: int) -> HttpResponse:
    return _panel_response(request, _mention(request, pk))


@require_POST
@curator_required
def decide(request: HttpRequest, pk: int) -> HttpResponse:
    mention = _mention(request, pk)
    form = DecisionForm(request.POST)
    if not form.is_valid():
        return _panel_response(request, mention, status=400, alert=_form_errors(form), alert_kind="error")
    data = form.cleaned_data
    concept = None
    if data["concept"]:
        concept = Concept.objects.filter(pk=data["concept"]).first()
        if concept is None:
            return _panel_response(request, mention, status=400, alert="That concept does not exist.", alert_kind="error")
    # The ranking the panel showed (kept in the process) becomes the stored suggestions in the decision's
    # transaction, so the decision records the rank the curator saw; a GET stores nothing.
    shown = services.panel_ranking(mention)
    try:
        outcome = services.decide(
            user=request.user,
            mention_id=mention.pk,
            action=data["action"],
            seen_updated_at=data["seen"],
            concept=concept,
            part=data["part"] if data["part"] is not None or data["action"] in ("accept", "nil") else 0,
            via=data["via"] or Decision.Via.CANDIDATE,
            time_on_task_ms=data["time_on_task_ms"],
            scope=data["scope"] or services.Scope.MENTION,
            teach=data["teach"],
            store_shown=lambda locked: services.store_ranking(locked, shown, locked=True),
        )
    except services.Conflict as exc:
        current = _mention(request, pk) if exc.mention is not None else mention
        return _panel_response(request, current, status=409, alert=str(exc), alert_kind="conflict", refresh_document=True)
    except services.CurationError as exc:
        return _panel_response(request, mention, status=400, alert=str(exc), alert_kind="error")
    decision = outcome.decision
    summary = _summary(decision)
    if outcome.other_parts:
        summary += " " + " ".join(_summary(d) for d in outcome.other_parts)
    if outcome.propagated:
        summary += f" Applied to {len(outcome.propagated)} identical mention{'s' if len(outcome.propagated) != 1 else ''}"
        summary += f" ({outcome.skipped} already decided, left as they were)." if outcome.skipped else "."
    trigger: dict[str, Any] = {"curation:decided": {"mention": mention.pk, "decision": decision.pk, "message": summary}}
    following = _next_open(mention, data["next"])
    if following is not None:
        # The page moves on by itself: answer with the next mention's panel (the summary is the page's toast).
        trigger["curation:decided"]["shown"] = following.pk
        return _panel_response(request, following, refresh_document=True, trigger=trigger)
    return _panel_response(request, _mention(request, pk), alert=summary, alert_kind="success", refresh_document=True, trigger=trigger)


def _next_open(decided: Mention, pk: int | None) -> Mention | None:
    """The mention the page asked to see next, if it is another open mention of the same document (a decision
    applied to identical mentions may have decided it: the page then moves on by itself, as before)."""
    if pk is None or pk == decided.pk:
        return None
    return (Mention.objects.select_related("document__collection__dictionary")
            .filter(pk=pk, document_id=decided.document_id, status__in=services.OPEN_STATUSES).first())


def _summary(decision: Decision) -> str:
    target = f" → {decision.concept.concept_id} {decision.concept.preferred_name}" if decision.concept else ""
    rank = f" (rank {decision.rank})" if decision.rank else ""
    return f"{decision.get_action_display()}: “{decision.mention_text}”{target}{rank}.{_taught(decision)}"


def _taught(decision: Decision) -> str:
    """What the decision taught, in the words of its summary (the rule is webapp.curation.teaching's)."""
    if decision.synonym is not None and decision.concept is not None:
        return f" Taught “{decision.synonym.text}” as a name of {decision.concept.preferred_name}."
    return "" if decision.teaches else " Taught nothing."


def _form_errors(form: Any) -> str:
    return "; ".join(f"{field}: {' '.join(errors)}" for field, errors in form.errors.items())


@require_POST
@curator_required
def undo(request: HttpRequest, pk: int) -> HttpResponse:
    decision = get_object_or_404(Decision.objects.select_related("document__collection"), pk=pk)
    access.check_decide_document(request.user, decision.document)
    return _undo(request, decision)


@require_POST
@curator_required
def undo_last(request: HttpRequest, pk: int) -> HttpResponse:
    doc = get_object_or_404(Document.objects.select_related("collection"), pk=pk)
    access.check_decide_document(request.user, doc)
    decision = services.last_undoable(request.user, doc)
    if decision is None:
        return _toast(request, "Nothing of yours to undo in this document.")
    return _undo(request, decision)


def _undo(request: HttpRequest, decision: Decision) -> HttpResponse:
    mention_pk = decision.mention_id
    try:
        undone = services.undo(user=request.user, decision_id=decision.pk)
    except services.Conflict as exc:
        target = exc.mention or (Mention.objects.filter(pk=mention_pk).first() if mention_pk else None)
        if target is None:
            return HttpResponse(str(exc), status=409)
        return _panel_response(request, _mention(request, target.pk), status=409, alert=str(exc), alert_kind="conflict", refresh_document=True)
    except services.CurationError as exc:
        if mention_pk is None:
            return HttpResponse(str(exc), status=400)
        return _panel_response(request, _mention(request, mention_pk), status=400, alert=str(exc), alert_kind="error")
    message = f"Undone: {decision.get_action_display().lower()} on “{decision.mention_text}”"
    message += f" and {len(undone) - 1} propagated decision{'s' if len(undone) != 2 else ''}." if len(undone) > 1 else "."
    if mention_pk is None or not Mention.objects.filter(pk=mention_pk).exists():
        # The undone decision added the mention: it is gone, so show the document without it.
        context = {**document_context(decision.document), "oob": True}
        body = render_to_string("curation/_panel_empty.html", {"alert": message}, request)
        body += render_to_string("curation/document.html#document-text", context, request)
        body += render_to_string("curation/document.html#status-counts", context, request)
        return HttpResponse(body, headers={"HX-Trigger": json.dumps({"curation:undone": {"mention": None, "message": message}})})
    trigger = {"curation:undone": {"mention": mention_pk, "message": message}}
    return _panel_response(request, _mention(request, mention_pk), alert=message, alert_kind="success", refresh_document=True,
                           trigger=trigger, store=True)


@require_GET
@reader_required
def search(request: HttpRequest, pk: int) -> HttpResponse:
    mention = _mention(request, pk)
    query = request.GET.get("q", "").strip()
    version = selectors.search_version(mention.document.collection)
    within = selectors.search_within(mention.document)  # the concept filter of the projects covering it
    hits = search_concepts(version, query, within=within) if version is not None and query else []
    context = {
        "mention": mention,
        "query": query,
        "hits": hits,
        "min_query_length": MIN_QUERY_LENGTH,
        "has_dictionary": version is not None,
        "seen": mention.updated_at.isoformat(),
    }
    return render(request, "curation/_search_results.html", context)


@require_GET
@reader_required
def family(request: HttpRequest, pk: int, concept_pk: int) -> HttpResponse:
    mention = _mention(request, pk)
    concept = get_object_or_404(Concept, pk=concept_pk)
    return render(request, "curation/_family.html", {"mention": mention, "f": selectors.family(concept), "seen": mention.updated_at.isoformat()})


@require_POST
@curator_required
def add_mention(request: HttpRequest, pk: int) -> HttpResponse:
    doc = get_object_or_404(Document.objects.select_related("collection__dictionary"), pk=pk)
    access.check_decide_document(request.user, doc)
    form = SpanForm(request.POST)
    if not form.is_valid():
        return _toast(request, _form_errors(form), status=400)
    try:
        decision = services.add_mention(
            user=request.user, document_id=doc.pk, start=form.cleaned_data["start"], end=form.cleaned_data["end"],
            mention_type=form.cleaned_data["mention_type"] or "",
        )
    except services.CurationError as exc:
        return _toast(request, str(exc), status=400)
    message = f"Added the mention “{decision.mention_text}”."
    trigger = {"curation:added": {"mention": decision.mention_id, "message": message}}
    return _panel_response(request, _mention(request, decision.mention_id), alert=message, alert_kind="success", refresh_document=True,
                           trigger=trigger, store=True)


@require_POST
@curator_required
def fix_span(request: HttpRequest, pk: int) -> HttpResponse:
    mention = _mention(request, pk)
    form = SpanForm(request.POST)
    if not form.is_valid() or form.cleaned_data.get("seen") is None:
        return _panel_response(request, mention, status=400, alert=_form_errors(form) or "seen: missing", alert_kind="error")
    try:
        decision = services.fix_span(
            user=request.user, mention_id=mention.pk, seen_updated_at=form.cleaned_data["seen"],
            start=form.cleaned_data["start"], end=form.cleaned_data["end"], time_on_task_ms=form.cleaned_data["time_on_task_ms"],
        )
    except services.Conflict as exc:
        return _panel_response(request, _mention(request, pk), status=409, alert=str(exc), alert_kind="conflict", refresh_document=True)
    except services.CurationError as exc:
        return _panel_response(request, mention, status=400, alert=str(exc), alert_kind="error")
    message = f"Span fixed: “{decision.mention_text}”."
    trigger = {"curation:decided": {"mention": mention.pk, "decision": decision.pk, "message": message, "advance": False}}
    return _panel_response(request, _mention(request, pk), alert=message, alert_kind="success", refresh_document=True,
                           trigger=trigger, store=True)


def _toast(request: HttpRequest, message: str, status: int = 200) -> HttpResponse:
    # 200 with no swap: the keyboard script shows the message; the page stays as it is.
    return HttpResponse(
        "",
        status=200,
        headers={"HX-Reswap": "none", "HX-Trigger": json.dumps({"curation:toast": {"message": message, "error": status >= 400}})},
    )
