"""Curator work carried to a dictionary's new release, and the index built over it.

- :func:`carry_over`: run by a worker after a new release is imported (and again whenever an admin asks; it is
  idempotent). Curator synonyms of the release curators worked on are copied to the surviving concept of the
  new release (the same id, else the one concept that took the old id as an alternative id). Curated links are
  left as they are: a decision stays on the concept it was made on (its provenance), and the collection's linker
  moves to the new release when an admin activates its index. Synonyms and links whose concept did not survive
  are listed for review (:func:`review_synonyms`, :func:`review_links`).
- :func:`queue_release_index`: a build of an index over the new release with the active index's encoder (and
  first stage), not activated when built: an admin activates it after reading the diff.

It reads the active index and the curated links, so it sits in training, above vocab and corpus (README,
"Layers"); the diff of two releases and the queueing of a carry-over stay in :mod:`webapp.vocab.releases`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.db import transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.db.models.functions import Now
from django.utils import timezone

from linker.text import normalize
from webapp.core.queue import enqueue, job_task_id
from webapp.corpus.models import Link
from webapp.linking.models import IndexVersion
from webapp.training.index_jobs import build_ended
from webapp.training.services import create_index_version
from webapp.vocab.models import Concept, DictionaryVersion, Name, ReleaseCarryOver
from webapp.vocab.releases import previous_release, survivors

__all__ = [
    "source_releases",
    "carry_over_on_promotion",
    "carry_over",
    "ReviewSynonym",
    "review_synonyms",
    "review_links",
    "queue_release_index",
    "release_index_builds",
]


def _surviving_ids(old: DictionaryVersion, new: DictionaryVersion, concept_ids: set[str]) -> set[str]:
    return {cid for cid, concept in survivors(old, new, concept_ids).items() if concept is not None}


def source_releases(version: DictionaryVersion) -> list[DictionaryVersion]:
    """The releases whose curator work is carried to ``version``: the one before it and, where curators still
    work on an older one (the active index serves it), that one too; newest first."""
    sources = []
    previous = previous_release(version)
    if previous is not None:
        sources.append(previous)
    active = (
        IndexVersion.objects.filter(dictionary_id=version.dictionary_id, state=IndexVersion.State.ACTIVE)
        .select_related("dictionary_version")
        .first()
    )
    if active is not None:
        served = active.dictionary_version
        if served.pk != version.pk and served.imported_at <= version.imported_at and served not in sources:
            sources.append(served)
    return sources


# --- carry-over ---------------------------------------------------------------------------------------------


def carry_over_on_promotion(sender: Any, index: Any, previous_version_id: int | None, **kwargs: Any) -> None:
    """When an index over a newer release than the one served before is promoted, carry the curator synonyms
    added to the old release since the new one's import (webapp.training.signals.index_promoted)."""
    if previous_version_id is not None and previous_version_id != index.dictionary_version_id:
        carry_over(index.dictionary_version_id)


@transaction.atomic
def carry_over(version_id: int) -> ReleaseCarryOver:
    """Copy the curator synonyms of the source releases to the surviving concepts of release ``version_id`` and
    record the counts; idempotent (a synonym already there is not copied again, the counts say what holds now).

    A synonym whose survivor already has a dictionary name of the same normalised form is "present", not copied.
    """
    version = DictionaryVersion.objects.select_related("dictionary").get(pk=version_id)
    record, _ = ReleaseCarryOver.objects.get_or_create(version=version)
    record = ReleaseCarryOver.objects.select_for_update().get(
        pk=record.pk
    )  # two runs at once: one after the other
    sources = source_releases(version)
    carried = present = to_review = 0
    seen: set[tuple[int, str]] = set()
    for source in sources:
        names = list(
            Name.objects.filter(concept__version=source, source=Name.Source.CURATOR)
            .select_related("concept")
            .order_by("created_at", "pk")
        )
        targets = survivors(source, version, {n.concept.concept_id for n in names})
        target_pks = {c.pk for c in targets.values() if c is not None}
        existing: dict[int, dict[str, str]] = defaultdict(dict)  # concept pk -> normalised -> source
        for concept_pk, normalized, name_source in Name.objects.filter(concept_id__in=target_pks).values_list(
            "concept_id", "normalized", "source"
        ):
            # A dictionary name wins over a curator's of the same form: the release itself now has the name.
            if existing[concept_pk].get(normalized) != Name.Source.DICTIONARY:
                existing[concept_pk][normalized] = name_source
        new_names = []
        for name in names:
            target = targets[name.concept.concept_id]
            if target is None:
                to_review += 1
                continue
            form = normalize(name.text)
            if (target.pk, form) in seen:
                continue
            seen.add((target.pk, form))
            held = existing[target.pk].get(form)
            if held is not None and held != Name.Source.CURATOR:
                present += 1
                continue
            carried += 1
            if held is None:
                existing[target.pk][form] = Name.Source.CURATOR
                new_names.append(
                    Name(
                        concept=target,
                        text=name.text,
                        normalized=form,
                        source=Name.Source.CURATOR,
                        created_by_id=name.created_by_id,
                    )
                )
        Name.objects.bulk_create(new_names, ignore_conflicts=True)
    record.previous = sources[0] if sources else None
    record.synonyms_carried, record.synonyms_present, record.synonyms_to_review = carried, present, to_review
    record.links_to_review = review_links(version).count()
    record.state, record.error, record.finished_at = ReleaseCarryOver.State.DONE, "", timezone.now()
    record.save()
    return record


@dataclass(frozen=True)
class ReviewSynonym:
    name: Name  # with concept__version
    source: DictionaryVersion


def review_synonyms(version: DictionaryVersion) -> list[ReviewSynonym]:
    """Curator synonyms of the source releases whose concept did not survive into ``version``."""
    out: list[ReviewSynonym] = []
    for source in source_releases(version):
        names = list(
            Name.objects.filter(concept__version=source, source=Name.Source.CURATOR)
            .select_related("concept__version__dictionary", "created_by")
            .order_by("concept__concept_id", "text")
        )
        alive = _surviving_ids(source, version, {n.concept.concept_id for n in names})
        out.extend(ReviewSynonym(n, source) for n in names if n.concept.concept_id not in alive)
    return out


def review_links(version: DictionaryVersion) -> QuerySet[Any]:
    """The current curated links (each mention part's latest curator link) to a concept of a source release that
    did not survive into ``version``: the mention may need relinking to a concept of the new release."""
    sources = source_releases(version)
    if not sources:
        return Link.objects.none()
    lost: list[int] = []
    for source in sources:
        linked = set(
            Link.objects.filter(origin=Link.Origin.CURATOR, concept__version=source)
            .values_list("concept__concept_id", flat=True)
            .distinct()
        )
        alive = _surviving_ids(source, version, linked)
        lost.extend(
            Concept.objects.filter(version=source, concept_id__in=linked - alive).values_list("pk", flat=True)
        )
    newer = Link.objects.filter(
        mention_id=OuterRef("mention_id"),
        part=OuterRef("part"),
        origin=Link.Origin.CURATOR,
        pk__gt=OuterRef("pk"),
    )
    return (
        Link.objects.filter(origin=Link.Origin.CURATOR, concept_id__in=lost)
        .exclude(Exists(newer))
        .select_related("mention__document__collection", "concept__version__dictionary", "created_by")
        .order_by("concept__concept_id", "mention__document_id", "mention__start", "pk")
    )


# --- an index over the new release ------------------------------------------------------------------------


def queue_release_index(version: DictionaryVersion) -> str:
    """Queue a build of an index over ``version`` with the active index's encoder and first stage, not activated
    when built; says what it did (or why nothing: no active index, it serves this release, one is there already)."""

    active = (
        IndexVersion.objects.filter(dictionary_id=version.dictionary_id, state=IndexVersion.State.ACTIVE)
        .select_related("encoder", "first_stage")
        .first()
    )
    if active is None:
        return "no index of this dictionary is active: none was built for the new release"
    if active.dictionary_version_id == version.pk:
        return f"the active index {active.pk} already serves this release"
    same = IndexVersion.objects.filter(
        dictionary_version=version, encoder=active.encoder, first_stage=active.first_stage
    )
    existing = (
        same.exclude(state__in=[IndexVersion.State.FAILED, IndexVersion.State.CANCELLED])
        .order_by("-pk")
        .first()
    )
    if existing is not None:
        return f"index {existing.pk} over this release with the active index's encoder is {existing.get_state_display().lower()}"
    with transaction.atomic():
        index = create_index_version(version, active.encoder, None, active.first_stage, activate=False)
        enqueue(
            "tasks.indexing.build_index_task",
            index.pk,
            False,
            task_id=job_task_id(index.build),
            on_failure=partial(_index_unqueued, index.pk),
        )
    encoder = active.encoder.name if active.encoder_id else "tf-idf only"
    return f"index {index.pk} queued over this release with the active index's encoder ({encoder}); not activated when built"


def _index_unqueued(index_id: int, exc: Exception) -> None:
    IndexVersion.objects.filter(pk=index_id, state=IndexVersion.State.BUILDING).update(
        state=IndexVersion.State.FAILED, error=str(exc), finished_at=Now()
    )
    build_ended(IndexVersion.objects.get(pk=index_id))


def release_index_builds(version: DictionaryVersion) -> QuerySet[Any]:
    """The index versions over a release, newest first (the diff page shows the pending build)."""
    return (
        IndexVersion.objects.filter(dictionary_version=version)
        .select_related("dictionary", "dictionary_version", "encoder", "first_stage")
        .order_by("-created_at")
    )
