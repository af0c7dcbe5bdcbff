"""Undo: a decision and every decision of its batch (propagation, the parts of a composite) go back together.

Undoing never deletes the log row: ``undone_at`` is set. It refuses (:class:`Conflict`) when a mention changed
after the decision, so an undo never overwrites a later curator's work.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from webapp.core.roles import is_admin
from webapp.corpus.models import Document, Link, Mention
from webapp.curation.models import Decision
from webapp.curation.services.audit_events import decision_undone
from webapp.curation.services.decisions import Action, Conflict
from webapp.curation.services.errors import CurationError
from webapp.linking.registry import forget_curator_synonym
from webapp.vocab.models import Name


@transaction.atomic
def undo(*, user: Any, decision_id: int) -> list[Decision]:
    """Undo a decision and every decision of its batch; refuses (Conflict) if a mention changed since."""
    first = Decision.objects.select_related("user").filter(pk=decision_id).first()
    if first is None:
        raise CurationError("no such decision")
    if first.user_id != user.pk and not is_admin(user):
        raise CurationError(f"only {first.user.get_username()} or an admin can undo this decision")
    decisions = list(Decision.objects.select_for_update().filter(batch=first.batch, undone_at__isnull=True).order_by("-created_at", "-id"))
    if not decisions:
        raise CurationError("this decision was undone already")
    now = timezone.now()
    for decision in decisions:
        decision.refresh_from_db(fields=["result_updated_at"])  # undoing a later part of the batch moved it on
        _undo_one(decision)
        decision.undone_at = now
        decision.undone_by = user
        decision.save(update_fields=["undone_at", "undone_by"])
    decision_undone(decisions, user, decision_id)
    return decisions


def _undo_one(decision: Decision) -> None:
    if decision.mention_id is None:
        return  # the mention is gone already
    mention = Mention.objects.select_for_update().get(pk=decision.mention_id)
    if decision.result_updated_at is not None and mention.updated_at != decision.result_updated_at:
        latest = Decision.objects.filter(mention=mention, created_at__gt=decision.created_at).select_related("user").first()
        who = f" by {latest.user.get_username()}" if latest is not None else ""
        raise Conflict(
            mention,
            f"“{mention.text}” was changed{who} after this decision, so undoing it would overwrite that change. Undo the later change first.",
            latest,
        )
    if decision.action == Action.ADD_MENTION:
        mention.delete()
        return
    _restore(decision, mention)
    # The mention is back to what the decision before this one left, in a new version: that decision stays
    # undoable (its "version after" follows the mention).
    before = (
        Decision.objects.filter(mention=mention, undone_at__isnull=True, created_at__lte=decision.created_at)
        .exclude(pk=decision.pk).order_by("-created_at", "-id").first()
    )
    if before is not None:
        Decision.objects.filter(pk=before.pk).update(result_updated_at=mention.updated_at)


def _restore(decision: Decision, mention: Mention) -> None:
    if decision.action == Action.FIX_SPAN:
        mention.start, mention.end = decision.previous_start, decision.previous_end
        mention.text = mention.document.text[mention.start : mention.end]
        mention.links.filter(origin=Link.Origin.MODEL).delete()  # suggestions were for the other span
        mention.save(update_fields=["start", "end", "text", "updated_at"])
        return
    Link.objects.filter(pk__in=decision.created_links, mention=mention).delete()
    decision.hard_negatives.all().delete()
    if decision.synonym_id is not None:
        still_needed = (
            Decision.objects.filter(undone_at__isnull=True, concept_id=decision.concept_id, mention_text=decision.mention_text)
            .exclude(pk=decision.pk)
            .exists()
        )
        if not still_needed:
            name = Name.objects.filter(pk=decision.synonym_id, source=Name.Source.CURATOR).select_related("concept").first()
            if name is not None:
                forget_curator_synonym(name)  # the live indexes stop returning it once this commits
                name.delete()
    mention.status = decision.previous_status or Mention.Status.PENDING
    mention.save(update_fields=["status", "updated_at"])


def last_undoable(user: Any, document: Document) -> Decision | None:
    """The user's latest decision in the document that is not undone yet (what the undo key undoes)."""
    return Decision.objects.filter(document=document, user=user, undone_at__isnull=True).order_by("-created_at", "-id").first()
