"""Curation pages (htmx): the dashboard, the review queue, the document view and its detection banner. The
candidate panel and the decisions made in it are :mod:`webapp.curation.panel_views`.

Views parse input with a form, call one service, and render; the work is in services/ and selectors.py.
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

from webapp.core.decorators import admin_required, reader_required
from webapp.core.queue import enqueue
from webapp.core.roles import is_admin
from webapp.corpus.models import Collection, Document
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
from webapp.projects import access
from webapp.projects.selectors import assignment_of

DOCUMENTS_PER_PAGE = 25
QUEUE_PREVIEW = 10
DETECTING = (Document.DetectionState.QUEUED, Document.DetectionState.RUNNING)


# --- pages ------------------------------------------------------------------------------------------------


@require_GET
@reader_required
def index(request: HttpRequest) -> HttpResponse:
    collections = access.visible_collections(request.user).order_by("slug")
    return render(request, "curation/index.html", {"stats": selectors.collection_stats(collections, access.visible_documents_q(request.user))})


@require_GET
@reader_required
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
        threshold = set_threshold(collection.pk, raw, user=request.user)
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
@reader_required
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


def document_context(document: Document, window: TextWindow | None = None) -> dict[str, Any]:
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
@reader_required
def document(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    doc = get_object_or_404(Document.objects.select_related("collection__dictionary"), collection__slug=slug, pk=pk)
    access.check_view_document(request.user, doc)
    previous, following = neighbours(doc, access.visible_documents_q(request.user))
    context = document_context(doc, _window_of(doc, request))
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
@reader_required
def detection(request: HttpRequest, pk: int) -> HttpResponse:
    """The document's detection banner, polled while mentions are being detected. Once detection has ended the
    answer is a 286 (htmx stops polling) carrying the banner's last state and, out of band, the document text
    and the status counts with the new mentions; ``curation:detected`` tells the keyboard script to select one."""
    doc = get_object_or_404(Document.objects.select_related("collection__dictionary"), pk=pk)
    access.check_view_document(request.user, doc)
    context = {**document_context(doc), "can_detect": is_admin(request.user)}
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
