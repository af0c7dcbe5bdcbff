"""Spans: a curator adds a mention the detector missed, or fixes the span of one it found.

Both are logged as decisions (``add_mention``, ``fix_span``) so they can be undone like any other.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction

from webapp.corpus.models import Document, Link, Mention, mention_too_long
from webapp.curation.models import Decision
from webapp.curation.services.audit_events import decision_made
from webapp.curation.services.decisions import (
    Action,
    Via,
    changed_since,
    conflict,
    lock_mention,
)
from webapp.curation.services.errors import CurationError


def _clean_span(text: str, start: int, end: int) -> tuple[int, int]:
    if not 0 <= start < end <= len(text):
        raise CurationError("select some text of the document first")
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start == end:
        raise CurationError("the selection holds only white space")
    too_long = mention_too_long(text[start:end])
    if too_long:
        raise CurationError(too_long)
    return start, end


@transaction.atomic
def add_mention(*, user: Any, document_id: int, start: int, end: int, mention_type: str = "") -> Decision:
    document = Document.objects.get(pk=document_id)
    start, end = _clean_span(document.text, start, end)
    if Mention.objects.filter(document=document, start=start, end=end, mention_type=mention_type).exists():
        raise CurationError(f"“{document.text[start:end]}” is a mention already")
    try:
        with transaction.atomic():
            mention = Mention.objects.create(
                document=document, start=start, end=end, text=document.text[start:end], mention_type=mention_type,
                status=Mention.Status.PENDING, source=Mention.Source.CURATOR,
            )
    except IntegrityError as exc:
        raise CurationError(f"this span cannot be added: {exc}") from exc
    decision = Decision.objects.create(
        document=document, mention=mention, mention_text=mention.text, action=Action.ADD_MENTION, via=Via.TEXT,
        user=user, previous_status="", result_updated_at=mention.updated_at,
    )
    decision_made(decision, user)
    return decision


@transaction.atomic
def fix_span(*, user: Any, mention_id: int, seen_updated_at: datetime, start: int, end: int, time_on_task_ms: int | None = None) -> Decision:
    mention = lock_mention(mention_id)
    if changed_since(mention, seen_updated_at):
        raise conflict(mention, seen_updated_at)
    start, end = _clean_span(mention.document.text, start, end)
    if (start, end) == (mention.start, mention.end):
        raise CurationError("the span is unchanged")
    if Mention.objects.filter(document_id=mention.document_id, start=start, end=end, mention_type=mention.mention_type).exclude(pk=mention.pk).exists():
        raise CurationError(f"another mention has the span “{mention.document.text[start:end]}” already")
    previous = (mention.start, mention.end, mention.status)
    mention.start, mention.end, mention.text = start, end, mention.document.text[start:end]
    mention.links.filter(origin=Link.Origin.MODEL).delete()  # suggestions were for the old text
    mention.save(update_fields=["start", "end", "text", "updated_at"])
    decision = Decision.objects.create(
        document_id=mention.document_id, mention=mention, mention_text=mention.text, action=Action.FIX_SPAN, via=Via.TEXT,
        user=user, previous_status=previous[2], previous_start=previous[0], previous_end=previous[1],
        time_on_task_ms=time_on_task_ms, result_updated_at=mention.updated_at,
    )
    decision_made(decision, user)
    return decision
