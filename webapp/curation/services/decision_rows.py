"""What one decision writes on one mention part, the building blocks of :mod:`.decisions` (one mention, and its
identical mentions in bulk): the curator Link, the Decision row that logs it for undo, the synonym it teaches and
the hard negatives ranked above the chosen concept; with the checks a chosen concept must pass (its dictionary, the
project's concept filter) and what a mention's parts and suggestions are."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from linker.text import normalize
from webapp.corpus.models import Link, Mention
from webapp.curation.models import Decision, HardNegative
from webapp.curation.services.errors import CurationError
from webapp.curation.teaching import Lesson
from webapp.projects.concept_filter import filter_for_document
from webapp.vocab.models import Concept, DictionaryVersion, Name

HARD_NEGATIVES_PER_DECISION = 5

Action = Decision.Action
Via = Decision.Via

# The status a mention takes on each action.
STATUS = {
    Action.ACCEPT: Mention.Status.ACCEPTED,
    Action.RELINK: Mention.Status.RELINKED,
    Action.NIL: Mention.Status.NIL,
    Action.REJECT: Mention.Status.REJECTED,
}


def part_count(mention: Mention) -> int:
    """How many parts a mention has: its own part texts, or as many as any link names (gold, model or curator).

    A composite the linker split itself, or a gold composite listed without part texts, has parts only its
    links know of.
    """
    highest = mention.links.order_by("-part").values_list("part", flat=True).first()
    return part_total(mention, highest)


def part_total(mention: Mention, highest_linked_part: int | None) -> int:
    return max(1, len(mention.part_texts), (highest_linked_part or 0) + 1)


def part_text(mention: Mention, part: int) -> str:
    return mention.part_texts[part] if part < len(mention.part_texts) else mention.text


def suggestions_of(mention: Mention, part: int) -> list[Link]:
    return list(
        mention.links.filter(origin=Link.Origin.MODEL, part=part).select_related("concept").order_by("rank", "id")
    )


def as_recorded(mention: Mention, action: str, concept: Concept | None, part: int) -> str:
    """A relink to the model's own top suggestion is recorded as an accept: the curator confirmed the model,
    whether by its candidate list or by finding the same concept through search (as propagation records twins)."""
    if action == Action.RELINK and concept is not None and top_concept_pk(mention, part) == concept.pk:
        return Action.ACCEPT
    return action


def top_concept_pk(mention: Mention, part: int) -> int | None:
    return (
        mention.links.filter(origin=Link.Origin.MODEL, part=part, concept__isnull=False)
        .order_by("rank", "id")
        .values_list("concept_id", flat=True)
        .first()
    )


def decision_row(
    mention: Mention, text: str, action: str, via: str, part: int, concept: Concept | None, link: Link | None,
    suggestions: Sequence[Link], user: Any, batch: uuid.UUID, previous_status: str, synonym: Name | None,
    time_on_task_ms: int | None, teaches: bool = True,
) -> Decision:
    """The log row of one decision on one part (unsaved), made after the mention's status and version changed."""
    return Decision(
        batch=batch,
        document_id=mention.document_id,
        mention=mention,
        mention_text=text,
        action=action,
        via=via,
        part=part,
        concept=concept,
        concept_ref=concept.concept_id if concept is not None else "",
        rank=link.rank if link is not None else None,
        score=link.score if link is not None else None,
        model_version=(link.model_version if link is not None else (suggestions[0].model_version if suggestions else "")),
        time_on_task_ms=time_on_task_ms,
        user=user,
        previous_status=previous_status,
        created_links=[link.pk] if link is not None else [],
        synonym=synonym,
        teaches=teaches,
        result_updated_at=mention.updated_at,
    )


def curator_link(mention: Mention, part: int, concept: Concept | None, suggestions: Sequence[Link], user: Any) -> Link:
    """The curator's link (None concept: NIL, unsaved), with the rank, score and model version of the suggestion chosen."""
    chosen = next((s for s in suggestions if concept is not None and s.concept_id == concept.pk), None)
    return Link(
        mention=mention,
        part=part,
        concept=concept,
        concept_ref=concept.concept_id if concept else "",
        nil=concept is None,
        origin=Link.Origin.CURATOR,
        score=chosen.score if chosen else None,
        rank=chosen.rank if chosen else None,
        model_version=chosen.model_version if chosen else (suggestions[0].model_version if suggestions else ""),
        created_by=user,
    )


def default_concept(mention: Mention, part: int, suggestions: Sequence[Link]) -> Concept:
    """What "accept" takes when no concept is named: the best suggestion of the part, else its gold concept."""
    for link in suggestions:
        if link.concept is not None:
            return link.concept
    gold = mention.links.filter(origin=Link.Origin.GOLD, part=part, concept__isnull=False).select_related("concept").first()
    if gold is not None and gold.concept is not None:
        return gold.concept
    raise CurationError(f"mention {mention.pk} has no suggestion or gold concept to accept; choose a concept (relink)")


def check_dictionary(mention: Mention, concept: Concept) -> None:
    dictionary_id = mention.document.collection.dictionary_id
    concept_dictionary = DictionaryVersion.objects.filter(pk=concept.version_id).values_list("dictionary_id", flat=True).get()
    if dictionary_id is not None and concept_dictionary != dictionary_id:
        raise CurationError(
            f"concept {concept.concept_id} belongs to another dictionary than {mention.document.collection.dictionary} "
            "(the collection's dictionary)"
        )


def check_concept_filter(mention: Mention, concept: Concept) -> None:
    """A project that links only to some concepts (webapp.projects.concept_filter) refuses the others, whether
    chosen from the candidates, found by search, or an outdated suggestion accepted as it stood."""
    concept_filter = filter_for_document(mention.document)
    if concept_filter is not None and not concept_filter.allows_id(concept.concept_id):
        raise CurationError(concept_filter.refusal(concept.concept_id, concept.preferred_name))


def add_synonym(taught: Lesson, user: Any) -> Name | None:
    """The curator synonym the decision's lesson gives its concept; None where it teaches no name, or the concept
    had the name already (undo keeps it)."""
    text, concept = taught.name, taught.concept
    if not text or concept is None or not normalize(text):
        return None
    name, created = Name.objects.get_or_create(
        concept=concept,
        text=text,
        defaults={"normalized": normalize(text), "source": Name.Source.CURATOR, "created_by": user},
    )
    return name if created else None


def hard_negatives(decision: Decision, suggestions: Sequence[Link], chosen: Concept | None, action: str) -> list[HardNegative]:
    """Suggestions the curator turned down (unsaved): those ranked above the chosen concept, or the top ones for NIL."""
    if action == Action.REJECT:
        return []  # the span is not a mention at all: a detector negative, not a linking one
    negatives: list[Link] = []
    for link in suggestions:
        if chosen is not None and link.concept_id == chosen.pk:
            break
        if link.concept_id is not None:
            negatives.append(link)
    return [
        HardNegative(decision=decision, mention_text=decision.mention_text, concept_id=link.concept_id, rank=link.rank, score=link.score)
        for link in negatives[:HARD_NEGATIVES_PER_DECISION]
    ]
