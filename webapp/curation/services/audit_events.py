"""What a decision and an undo tell the audit log (webapp.audit): who, which decision, a short before/after and a
link to the mention on its document page. The curation decision log keeps the whole account; this is not a copy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.urls import reverse

from webapp.audit import actions
from webapp.audit.events import record
from webapp.corpus.models import Mention
from webapp.curation.models import Decision


def mention_link(decision: Decision, mention_kept: bool = True) -> str:
    """The mention on its document's curation page (the document's page when the mention is gone)."""
    # A decision just made holds its locked mention, read with its document and collection: no query for them.
    cached = Decision.mention.is_cached(decision) and decision.mention is not None
    document = decision.mention.document if cached else decision.document
    url = reverse("curation:document", args=[document.collection.slug, document.pk])
    return f"{url}#mention-{decision.mention_id}" if decision.mention_id and mention_kept else url


def _concept(decision: Decision) -> str | None:
    return decision.concept.concept_id if decision.concept_id else (decision.concept_ref or None)


def decision_made(decision: Decision, user: Any, *, propagated: int = 0, parts: int = 1, scope: str = "mention") -> None:
    """One event for one decision, however many identical mentions it was applied to (``propagated``) or parts of a
    composite mention it covered (``parts``)."""
    after: dict[str, Any] = {"action": decision.action, "via": decision.via, "concept": _concept(decision)}
    if decision.action == Decision.Action.FIX_SPAN:
        after = {"action": decision.action, "span": [decision.mention.start, decision.mention.end]}
        before: dict[str, Any] = {"span": [decision.previous_start, decision.previous_end]}
    else:
        before = {"status": decision.previous_status or None}
    if parts > 1:
        after["parts"] = parts
    if propagated:
        after.update(propagated=propagated, scope=scope)
    record(actions.DECISION_MADE, actor=user, obj=decision, label=f"{decision.action} “{decision.mention_text}”"[:255],
           before=before, after=after, link=mention_link(decision))


def decision_undone(decisions: Sequence[Decision], user: Any, decision_id: int) -> None:
    """One event for an undo: the decision asked for, with the others of its batch counted."""
    asked = next((d for d in decisions if d.pk == decision_id), decisions[-1])
    status = Mention.objects.filter(pk=asked.mention_id).values_list("status", flat=True).first()
    before = {"action": asked.action, "concept": _concept(asked)}
    after: dict[str, Any] = {"status": status, "undone": len(decisions)}
    record(actions.DECISION_UNDONE, actor=user, obj=asked, label=f"undo {asked.action} “{asked.mention_text}”"[:255],
           before=before, after=after, link=mention_link(asked, mention_kept=status is not None))
