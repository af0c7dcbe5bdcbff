"""A curator's decision on a mention: accept, relink (choose a concept), NIL, or reject the span.

One transaction: the mention row is locked, the version the curator saw (its ``updated_at``) is compared with
the stored one, a curator Link records who, when, the chosen candidate's rank and the model version, and the
mention's status changes. Accepted or relinked text becomes a curator synonym (a vocab Name with source
"curator") of the chosen concept, so the next index build and the concept search know it at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from django.db import transaction

from linker.text import normalize
from webapp.corpus.models import Link, Mention
from webapp.vocab.models import Concept, DictionaryVersion, Name

__all__ = ["Action", "DecisionError", "StaleDecision", "DecisionResult", "record_decision"]


class Action(StrEnum):
    ACCEPT = "accept"
    RELINK = "relink"
    NIL = "nil"
    REJECT = "reject"


class DecisionError(ValueError):
    """The decision cannot be recorded as asked (no concept to accept, a concept of another dictionary ...)."""


class StaleDecision(Exception):
    """The mention changed since the curator loaded it; the message says when and what to do."""

    def __init__(self, mention: Mention, seen: datetime) -> None:
        self.mention = mention
        self.seen = seen
        super().__init__(
            f"mention {mention.pk} was changed at {mention.updated_at.isoformat()} (status {mention.status}) "
            f"after the version you saw ({seen.isoformat()}); reload it and decide again"
        )


_STATUS = {
    Action.ACCEPT: Mention.Status.ACCEPTED,
    Action.RELINK: Mention.Status.RELINKED,
    Action.NIL: Mention.Status.NIL,
    Action.REJECT: Mention.Status.REJECTED,
}


@dataclass(frozen=True)
class DecisionResult:
    mention: Mention
    link: Link | None  # None for a rejected span
    synonym_created: bool


@transaction.atomic
def record_decision(
    *,
    mention_id: int,
    action: Action | str,
    user: Any,
    seen_updated_at: datetime,
    concept: Concept | None = None,
    part: int = 0,
    model_version: str = "",
) -> DecisionResult:
    """Record one decision; raises :class:`StaleDecision` if the mention changed since ``seen_updated_at``.

    ``accept`` without a concept takes the best model suggestion of the part (else its gold concept);
    ``relink`` needs a concept; ``nil`` and ``reject`` take none. The rank and model version of the chosen
    concept come from the model's suggestions for the part where it was among them.
    """
    action = Action(action)
    mention = Mention.objects.select_for_update().select_related("document__collection").get(pk=mention_id)
    if mention.updated_at != seen_updated_at:
        raise StaleDecision(mention, seen_updated_at)
    linked_parts = list(mention.links.values_list("part", flat=True))
    if part < 0 or part >= max(1, len(mention.part_texts), max(linked_parts, default=-1) + 1):
        raise DecisionError(f"mention {mention.pk} has no composite part {part}")
    if action in (Action.NIL, Action.REJECT) and concept is not None:
        raise DecisionError(f"{action} takes no concept")
    suggestions = list(mention.links.filter(origin=Link.Origin.MODEL, part=part).select_related("concept").order_by("rank", "id"))
    if action == Action.ACCEPT and concept is None:
        concept = _default_concept(mention, part, suggestions)
    if action == Action.RELINK and concept is None:
        raise DecisionError("relink needs a concept")
    if concept is not None:
        _check_dictionary(mention, concept)

    link = None
    synonym_created = False
    if action != Action.REJECT:
        chosen = next((s for s in suggestions if concept is not None and s.concept_id == concept.pk), None)
        link = Link.objects.create(
            mention=mention,
            part=part,
            concept=concept,
            concept_ref=concept.concept_id if concept else "",
            nil=concept is None,
            origin=Link.Origin.CURATOR,
            score=chosen.score if chosen else None,
            rank=chosen.rank if chosen else None,
            model_version=model_version or (chosen.model_version if chosen else (suggestions[0].model_version if suggestions else "")),
            created_by=user,
        )
        # A composite split by the linker ("breast and ovarian cancer") has no text per part: its whole text is
        # no synonym of either part's concept. Sources that list part texts (BC5CDR's 7th column) give one.
        composite_without_part_texts = not mention.part_texts and max(linked_parts, default=0) > 0
        if concept is not None and not composite_without_part_texts:
            synonym_created = _add_synonym(concept, _part_text(mention, part), user)
    mention.status = _STATUS[action]
    mention.save(update_fields=["status", "updated_at"])
    return DecisionResult(mention, link, synonym_created)


def _default_concept(mention: Mention, part: int, suggestions: list[Link]) -> Concept:
    for link in suggestions:
        if link.concept is not None:
            return link.concept
    gold = mention.links.filter(origin=Link.Origin.GOLD, part=part, concept__isnull=False).select_related("concept").first()
    if gold is not None and gold.concept is not None:
        return gold.concept
    raise DecisionError(f"mention {mention.pk} has no suggestion or gold concept to accept; choose a concept (relink)")


def _check_dictionary(mention: Mention, concept: Concept) -> None:
    dictionary_id = mention.document.collection.dictionary_id
    concept_dictionary = DictionaryVersion.objects.filter(pk=concept.version_id).values_list("dictionary_id", flat=True).get()
    if dictionary_id is not None and concept_dictionary != dictionary_id:
        raise DecisionError(
            f"concept {concept.concept_id} belongs to another dictionary than {mention.document.collection.dictionary} "
            "(the collection's dictionary)"
        )


def _part_text(mention: Mention, part: int) -> str:
    return mention.part_texts[part] if part < len(mention.part_texts) else mention.text


def _add_synonym(concept: Concept, text: str, user: Any) -> bool:
    text = text.strip()
    if not text or not normalize(text):
        return False
    _, created = Name.objects.get_or_create(
        concept=concept,
        text=text,
        defaults={"normalized": normalize(text), "source": Name.Source.CURATOR, "created_by": user},
    )
    return created
