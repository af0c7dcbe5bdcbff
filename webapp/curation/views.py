"""Curation pages (htmx): dashboard, review queue, the document view, the candidate panel and decisions.

Views parse input with a form, call one service, and render; the work is in services/ and selectors.py.
htmx requests get fragments: a decision answers with the refreshed panel plus out-of-band swaps of the
document text and the status counts, and an ``HX-Trigger`` event the keyboard script reacts to.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseStopPolling

from webapp.core.decorators import admin_required, curator_required
from webapp.core.queue import enqueue
from webapp.core.roles import is_admin
from webapp.corpus.models import Collection, Document, Mention
from webapp.corpus.selectors import (
    Progress,
    document_status_counts,
    mention_rows,
    neighbours,
    status_counts,
    text_blocks,
)
from webapp.corpus.windows import TextWindow, window_at, window_number
from webapp.curation import selectors, services
from webapp.curation.forms import DecisionForm, SpanForm
from webapp.curation.models import Decision
from webapp.projects import access
from webapp.projects.selectors import assignment_of
from webapp.vocab.models import Concept
from webapp.vocab.selectors import MIN_QUERY_LENGTH, search_concepts

DOCUMENTS_PER_PAGE = 25
QUEUE_PREVIEW = 10
DETECTING = (Document.DetectionState.QUEUED, Document.DetectionState.RUNNING)


def _mention(request: HttpRequest, pk: int) -> Mention:
    """The mention, if the user may see it (GET) or decide on it (POST): projects restrict both (webapp.projects.access)."""
    mention = get_object_or_404(Mention.objects.select_related("document__collection__dictionary"), pk=pk)
    check = access.check_decide_document if request.method == "POST" else access.check_view_document
    check(request.user, mention.document)
    return mention


# --- pages ------------------------------------------------------------------------------------------------


@require_GET
@curator_required
def index(request: HttpRequest) -> HttpResponse:
    collections = access.visible_collections(request.user).order_by("slug")
    return render(request, "curation/index.html", {"stats": selectors.collection_stats(collections, access.visible_documents_q(request.user))})


@require_GET
@curator_required
def dashboard(request: HttpRequest, slug: str) -> HttpResponse:
    collection = get_object_or_404(Collection.objects.select_related("dictionary"), slug=slug)
    access.check_view(request.user, collection)
    # A project over some of the documents hides only those (their mentions, queue and decisions) from non-members.
    visible = access.visible_documents_q(request.user)
    (stats,) = selectors.collection_stats(Collection.objects.filter(pk=collection.pk), visible)
    page = Paginator(selectors.documents_with_review_counts(collection, visible), DOCUMENTS_PER_PAGE).get_page(request.GET.get("page"))
    conflicts_only = request.GET.get("queue") == "conflicts"
    context = {
        "collection": collection,
        "stats": stats,
        "page": page,
        "rows": [(doc, Progress(doc.n_mentions, doc.n_reviewed)) for doc in page],  # type: ignore[attr-defined]
        "queue": list(selectors.review_queue(collection, type_conflicts=conflicts_only, visible=visible)[:QUEUE_PREVIEW]),
        "conflicts_only": conflicts_only,
        "type_conflicts": selectors.type_conflict_count(collection, visible),
        "recent": selectors.recent_decisions(collection, visible=visible),
        "activity": selectors.curator_activity(collection, visible),
        "hidden_documents": access.hidden_documents_note(request.user, collection),
        "auto": selectors.auto_accept_state(collection),
    }
    return render(request, "curation/dashboard.html", context)


@require_POST
@admin_required
def auto_accept(request: HttpRequest, slug: str) -> HttpResponse:
    """Set or turn off the collection's auto-accept threshold; the worker then accepts the open mentions that reach it."""
    from webapp.curation.services.auto_accept import set_threshold

    collection = get_object_or_404(Collection, slug=slug)
    raw = "" if request.POST.get("off") else request.POST.get("threshold", "")
    try:
        threshold = set_threshold(collection.pk, raw)
    except ValueError as exc:
        messages.error(request, f"Auto-accept not changed: {exc}.")
        return redirect("curation:dashboard", slug=slug)
    if threshold is None:
        messages.success(request, f"Auto-accept is off for {collection}: every mention waits for a curator.")
    else:
        enqueue("tasks.curation.suggest_links_task", collection.pk)
        messages.success(request, f"Auto-accept at {threshold:.0%} for {collection}: the worker accepts the open mentions "
                                  "whose top-1 is at least that likely right (reload to see them).")
    return redirect("curation:dashboard", slug=slug)


@require_POST
@admin_required
def suggest(request: HttpRequest, slug: str) -> HttpResponse:
    collection = get_object_or_404(Collection, slug=slug)
    enqueue("tasks.curation.suggest_links_task", collection.pk)
    messages.success(request, f"Linking the open mentions of {collection} in the background; reload for the new suggestions.")
    return redirect("curation:dashboard", slug=slug)


@require_GET
@curator_required
def queue_next(request: HttpRequest, slug: str) -> HttpResponse:
    collection = get_object_or_404(Collection, slug=slug)
    access.check_view(request.user, collection)
    conflicts = request.GET.get("conflicts") == "1"  # only suggested links with a type conflict
    mention = selectors.next_in_queue(collection, type_conflicts=conflicts, visible=access.visible_documents_q(request.user))
    if mention is None:
        empty = "has no open mention whose suggested link has a type conflict" if conflicts else "is empty: every mention has a decision"
        messages.success(request, f"The review queue of {collection} {empty}.")
        return redirect("curation:dashboard", slug=slug)
    url = reverse("curation:document", args=[slug, mention.document_id])
    return redirect(f"{url}?m={mention.pk}&queue=1{'&conflicts=1' if conflicts else ''}")


def _document_context(document: Document, window: TextWindow | None = None) -> dict[str, Any]:
    """The text (of a long document: the part ``window``, else its first) with its mentions, and the counts."""
    window = window or window_number(document, 1)
    rows = mention_rows(document, window)
    counts = document_status_counts(document) if not window.is_whole else status_counts(rows)
    return {
        "collection": document.collection,
        "document": document,
        "detecting": document.detection_state in DETECTING,
        "window": window,
        "rows": rows,
        "mention_total": sum(count for _, _, count in counts),
        "blocks": text_blocks(document, rows, window),
        "plain_title": "" if document.text.startswith(document.title) or window.start > 0 else document.title,
        "status_counts": counts,
        "open_count": sum(1 for r in rows if r.mention.status in services.OPEN_STATUSES),
    }


def _window_of(document: Document, request: HttpRequest) -> TextWindow:
    """The part a page shows: the one holding the mention it opens on (?m=), else the part asked for (?part=)."""
    selected = request.GET.get("m", "")
    wanted = selected.isdigit() and len(selected) < 19  # an id; a longer number is no id (and overflows bigint)
    start = document.mentions.filter(pk=int(selected)).values_list("start", flat=True).first() if wanted else None
    return window_at(document, start) if start is not None else window_number(document, request.GET.get("part"))


@require_GET
@curator_required
def document(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    doc = get_object_or_404(Document.objects.select_related("collection__dictionary"), collection__slug=slug, pk=pk)
    access.check_view_document(request.user, doc)
    previous, following = neighbours(doc, access.visible_documents_q(request.user))
    context = _document_context(doc, _window_of(doc, request))
    types = sorted({r.mention.mention_type for r in context["rows"] if r.mention.mention_type})
    context.update(
        {
            "previous": previous,
            "next": following,
            "queue_mode": request.GET.get("queue") == "1",
            "queue_conflicts": request.GET.get("conflicts") == "1",
            "mention_types": types or ["Disease"],
            "selected": request.GET.get("m", ""),
            "scopes": [
                (services.Scope.MENTION, "This mention only"),
                (services.Scope.DOCUMENT, "Identical mentions in this document"),
                (services.Scope.COLLECTION, "Identical mentions in the collection"),
            ],
        }
    )
    context["can_detect"] = is_admin(request.user) and not doc.collection.is_workspace
    context["can_decide"] = access.document_decide_refusal(request.user, doc) is None
    context["assignment"] = assignment_of(doc)
    return render(request, "curation/document.html", context)


# --- mention detection -------------------------------------------------------------------------------------


@require_GET
@curator_required
def detection(request: HttpRequest, pk: int) -> HttpResponse:
    """The document's detection banner, polled while mentions are being detected. Once detection has ended the
    answer is a 286 (htmx stops polling) carrying the banner's last state and, out of band, the document text
    and the status counts with the new mentions; ``curation:detected`` tells the keyboard script to select one."""
    doc = get_object_or_404(Document.objects.select_related("collection__dictionary"), pk=pk)
    access.check_view_document(request.user, doc)
    context = {**_document_context(doc), "can_detect": is_admin(request.user)}
    body = render_to_string("curation/document.html#detection-status", context, request)
    if context["detecting"]:
        return HttpResponse(body)
    context["oob"] = True
    body += render_to_string("curation/document.html#document-text", context, request)
    body += render_to_string("curation/document.html#status-counts", context, request)
    count = context["mention_total"]
    message = (f"{count} mention{'s' if count != 1 else ''} detected." if doc.detection_state == Document.DetectionState.DONE
               else "Mention detection failed: see above the text.")
    response = HttpResponseStopPolling(body)
    response["HX-Trigger-After-Swap"] = json.dumps({"curation:detected": {"state": doc.detection_state, "message": message}})
    return response


@require_POST
@admin_required
def detect_again(request: HttpRequest, pk: int) -> HttpResponse:
    doc = get_object_or_404(Document.objects.select_related("collection__dictionary"), pk=pk)
    try:
        services.redetect(doc)
    except services.CurationError as exc:
        messages.error(request, f"Not queued: {exc}.")
    else:
        messages.success(request, "Detecting the mentions again; your decisions and the mentions curators added are kept.")
    return redirect("curation:document", slug=doc.collection.slug, pk=doc.pk)


# --- fragments -----------------------------------------------------------------------------------------------


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
        doc_context = {**_document_context(mention.document, window_at(mention.document, mention.start)), "oob": True}
        body += render_to_string("curation/document.html#document-text", doc_context, request)
        body += render_to_string("curation/document.html#status-counts", doc_context, request)
    response = HttpResponse(body, status=status)
    if trigger:
        response["HX-Trigger"] = json.dumps(trigger)
    return response


@require_GET
@curator_required
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
    trigger = {"curation:decided": {"mention": mention.pk, "decision": decision.pk, "message": summary}}
    return _panel_response(request, _mention(request, pk), alert=summary, alert_kind="success", refresh_document=True, trigger=trigger)


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
        context = {**_document_context(decision.document), "oob": True}
        body = render_to_string("curation/_panel_empty.html", {"alert": message}, request)
        body += render_to_string("curation/document.html#document-text", context, request)
        body += render_to_string("curation/document.html#status-counts", context, request)
        return HttpResponse(body, headers={"HX-Trigger": json.dumps({"curation:undone": {"mention": None, "message": message}})})
    trigger = {"curation:undone": {"mention": mention_pk, "message": message}}
    return _panel_response(request, _mention(request, mention_pk), alert=message, alert_kind="success", refresh_document=True,
                           trigger=trigger, store=True)


@require_GET
@curator_required
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
@curator_required
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
