"""A dictionary's releases side by side: what changed between two, and curator work carried to the newer one.

- :func:`release_diff`: concepts added, removed, merged (an old id that a concept of the new release lists as an
  alternative id: MEDIC AltDiseaseIDs, OBO alt_id), obsoleted (OBO terms imported with their obsolete flag),
  renamed (preferred name changed) and dictionary names added/removed per concept. Only the release's own names
  are compared: curator synonyms are the carry-over's business, not the release's.
- :func:`carry_over`: run by a worker after a new release is imported (and again whenever an admin asks; it is
  idempotent). Curator synonyms of the release curators worked on are copied to the surviving concept of the
  new release (the same id, else the one concept that took the old id as an alternative id). Curated links are
  left as they are: a decision stays on the concept it was made on (its provenance), and the collection's linker
  moves to the new release when an admin activates its index. Synonyms and links whose concept did not survive
  are listed for review (:func:`review_synonyms`, :func:`review_links`).
- :func:`queue_release_index`: a build of an index over the new release with the active index's encoder (and
  first stage), not activated when built: an admin activates it after reading the diff.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from django.core.cache import cache
from django.db import transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.db.models.functions import Now
from django.utils import timezone

from linker.text import normalize
from webapp.vocab.models import Concept, DictionaryVersion, Name, ReleaseCarryOver

__all__ = [
    "ConceptRef", "Merged", "Renamed", "NameChange", "ReleaseDiff", "release_diff", "previous_release", "default_pair",
    "source_releases", "survivors", "carry_over", "review_synonyms", "review_links", "queue_carry_over",
    "queue_release_index", "release_index_builds", "CARRY_OVER_TASK",
]

logger = logging.getLogger(__name__)

CARRY_OVER_TASK = "tasks.releases.carry_over_task"
# The diff of two releases never changes (their dictionary names are written once, at import): kept this long.
DIFF_CACHE_SECONDS = 3600


# --- which releases -----------------------------------------------------------------------------------------


def _ordered(versions: QuerySet[DictionaryVersion]) -> QuerySet[DictionaryVersion]:
    return versions.order_by("-imported_at", "-pk")


def previous_release(version: DictionaryVersion) -> DictionaryVersion | None:
    """The release of the same dictionary imported just before ``version``."""
    older = DictionaryVersion.objects.filter(dictionary_id=version.dictionary_id).exclude(pk=version.pk).filter(
        imported_at__lte=version.imported_at)
    return _ordered(older).first()


def default_pair(versions: list[DictionaryVersion]) -> tuple[DictionaryVersion, DictionaryVersion] | None:
    """(the one before, the newest) of a dictionary's releases, newest first; None with fewer than two."""
    return (versions[1], versions[0]) if len(versions) > 1 else None


def source_releases(version: DictionaryVersion) -> list[DictionaryVersion]:
    """The releases whose curator work is carried to ``version``: the one before it and, where curators still
    work on an older one (the active index serves it), that one too; newest first."""
    from webapp.training.models import IndexVersion

    sources = []
    previous = previous_release(version)
    if previous is not None:
        sources.append(previous)
    active = (IndexVersion.objects.filter(dictionary_id=version.dictionary_id, state=IndexVersion.State.ACTIVE)
              .select_related("dictionary_version").first())
    if active is not None:
        served = active.dictionary_version
        if served.pk != version.pk and served.imported_at <= version.imported_at and served not in sources:
            sources.append(served)
    return sources


# --- the diff -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConceptRef:
    concept_id: str
    name: str


@dataclass(frozen=True)
class Merged:
    old: ConceptRef
    into: tuple[ConceptRef, ...]  # the concepts of the new release listing the old id as an alternative id


@dataclass(frozen=True)
class Renamed:
    concept_id: str
    old_name: str
    new_name: str


@dataclass(frozen=True)
class NameChange:
    concept: ConceptRef
    added: tuple[str, ...]
    removed: tuple[str, ...]


@dataclass
class ReleaseDiff:
    old: DictionaryVersion
    new: DictionaryVersion
    added: list[ConceptRef] = field(default_factory=list)
    removed: list[ConceptRef] = field(default_factory=list)
    merged: list[Merged] = field(default_factory=list)
    obsoleted: list[ConceptRef] = field(default_factory=list)
    renamed: list[Renamed] = field(default_factory=list)
    names: list[NameChange] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        return {
            "added": len(self.added), "removed": len(self.removed), "merged": len(self.merged),
            "obsoleted": len(self.obsoleted), "renamed": len(self.renamed), "names": len(self.names),
            "names_added": sum(len(c.added) for c in self.names),
            "names_removed": sum(len(c.removed) for c in self.names),
        }


@dataclass(frozen=True)
class _Release:
    """One release's concepts, read once: id -> (preferred name, obsolete), alt id -> carriers, names."""

    concepts: dict[str, tuple[str, bool]]
    carriers: dict[str, list[str]]  # alternative id -> live concepts listing it, by id
    names: dict[str, set[str]]  # concept id -> dictionary names


def _read(version: DictionaryVersion) -> _Release:
    concepts: dict[str, tuple[str, bool]] = {}
    carriers: dict[str, list[str]] = defaultdict(list)
    rows = Concept.objects.filter(version=version).order_by("concept_id").values_list(
        "concept_id", "preferred_name", "obsolete", "alt_ids")
    for cid, preferred, obsolete, alt_ids in rows.iterator(chunk_size=20000):
        concepts[cid] = (preferred, obsolete)
        if not obsolete:
            for alt in alt_ids or ():
                carriers[alt].append(cid)
    names: dict[str, set[str]] = defaultdict(set)
    name_rows = Name.objects.filter(concept__version=version, source=Name.Source.DICTIONARY).values_list(
        "concept__concept_id", "text")
    for cid, text in name_rows.iterator(chunk_size=20000):
        names[cid].add(text)
    return _Release(concepts, dict(carriers), dict(names))


def release_diff(old: DictionaryVersion, new: DictionaryVersion) -> ReleaseDiff:
    """What changed from release ``old`` to release ``new`` of one dictionary (lists sorted by concept id).

    Raises ValueError for releases of two dictionaries or one release compared with itself."""
    if old.dictionary_id != new.dictionary_id:
        raise ValueError(f"{old} and {new} are releases of two dictionaries; a diff compares releases of one")
    if old.pk == new.pk:
        raise ValueError(f"release {old.release!r} compared with itself: choose two releases")
    key = f"release-diff:{old.pk}:{new.pk}"
    cached = cache.get(key)
    if cached is not None:
        cached.old, cached.new = old, new
        return cached
    diff = _compute_diff(old, new)
    cache.set(key, diff, DIFF_CACHE_SECONDS)
    return diff


def _compute_diff(old: DictionaryVersion, new: DictionaryVersion) -> ReleaseDiff:
    before, after = _read(old), _read(new)
    diff = ReleaseDiff(old, new)
    live_before = {cid for cid, (_, obsolete) in before.concepts.items() if not obsolete}
    live_after = {cid for cid, (_, obsolete) in after.concepts.items() if not obsolete}
    for cid in sorted(live_after - live_before):
        diff.added.append(ConceptRef(cid, after.concepts[cid][0]))
    for cid in sorted(live_before - live_after):
        ref = ConceptRef(cid, before.concepts[cid][0])
        into = after.carriers.get(cid)
        if into:
            diff.merged.append(Merged(ref, tuple(ConceptRef(c, after.concepts[c][0]) for c in into)))
        elif cid in after.concepts:
            diff.obsoleted.append(ref)
        else:
            diff.removed.append(ref)
    for cid in sorted(live_before & live_after):
        old_name, new_name = before.concepts[cid][0], after.concepts[cid][0]
        if old_name != new_name:
            diff.renamed.append(Renamed(cid, old_name, new_name))
        was, now = before.names.get(cid, set()), after.names.get(cid, set())
        if was != now:
            diff.names.append(NameChange(ConceptRef(cid, new_name), tuple(sorted(now - was)), tuple(sorted(was - now))))
    return diff


# --- surviving concepts -------------------------------------------------------------------------------------


def survivors(old: DictionaryVersion, new: DictionaryVersion, concept_ids: set[str]) -> dict[str, Concept | None]:
    """For each old concept id: the live concept of ``new`` that carries it on (the same id, else the one concept
    listing it as an alternative id), or None where it did not survive or several concepts claim it."""
    live = Concept.objects.filter(version=new, obsolete=False)
    same = {c.concept_id: c for c in live.filter(concept_id__in=concept_ids)}
    out: dict[str, Concept | None] = {cid: same.get(cid) for cid in concept_ids}
    missing = [cid for cid, c in out.items() if c is None]
    if missing:
        claims: dict[str, list[Concept]] = defaultdict(list)
        for concept in live.filter(alt_ids__overlap=missing).order_by("concept_id"):
            for alt in concept.alt_ids:
                if alt in out and out[alt] is None:
                    claims[alt].append(concept)
        for cid, carriers in claims.items():
            if len(carriers) == 1:
                out[cid] = carriers[0]
    return out


def _surviving_ids(old: DictionaryVersion, new: DictionaryVersion, concept_ids: set[str]) -> set[str]:
    return {cid for cid, concept in survivors(old, new, concept_ids).items() if concept is not None}


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
    record = ReleaseCarryOver.objects.select_for_update().get(pk=record.pk)  # two runs at once: one after the other
    sources = source_releases(version)
    carried = present = to_review = 0
    seen: set[tuple[int, str]] = set()
    for source in sources:
        names = list(Name.objects.filter(concept__version=source, source=Name.Source.CURATOR)
                     .select_related("concept").order_by("created_at", "pk"))
        targets = survivors(source, version, {n.concept.concept_id for n in names})
        target_pks = {c.pk for c in targets.values() if c is not None}
        existing: dict[int, dict[str, str]] = defaultdict(dict)  # concept pk -> normalised -> source
        for concept_pk, normalized, name_source in Name.objects.filter(concept_id__in=target_pks).values_list(
                "concept_id", "normalized", "source"):
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
                new_names.append(Name(concept=target, text=name.text, normalized=form, source=Name.Source.CURATOR,
                                      created_by_id=name.created_by_id))
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
        names = list(Name.objects.filter(concept__version=source, source=Name.Source.CURATOR)
                     .select_related("concept__version__dictionary", "created_by").order_by("concept__concept_id", "text"))
        alive = _surviving_ids(source, version, {n.concept.concept_id for n in names})
        out.extend(ReviewSynonym(n, source) for n in names if n.concept.concept_id not in alive)
    return out


def review_links(version: DictionaryVersion) -> QuerySet[Any]:
    """The current curated links (each mention part's latest curator link) to a concept of a source release that
    did not survive into ``version``: the mention may need relinking to a concept of the new release."""
    from webapp.corpus.models import Link

    sources = source_releases(version)
    if not sources:
        return Link.objects.none()
    lost: list[int] = []
    for source in sources:
        linked = set(Link.objects.filter(origin=Link.Origin.CURATOR, concept__version=source)
                     .values_list("concept__concept_id", flat=True).distinct())
        alive = _surviving_ids(source, version, linked)
        lost.extend(Concept.objects.filter(version=source, concept_id__in=linked - alive).values_list("pk", flat=True))
    newer = Link.objects.filter(mention_id=OuterRef("mention_id"), part=OuterRef("part"), origin=Link.Origin.CURATOR,
                                pk__gt=OuterRef("pk"))
    return (Link.objects.filter(origin=Link.Origin.CURATOR, concept_id__in=lost)
            .exclude(Exists(newer))
            .select_related("mention__document__collection", "concept__version__dictionary", "created_by")
            .order_by("concept__concept_id", "mention__document_id", "mention__start", "pk"))


# --- queueing after an import -------------------------------------------------------------------------------


def queue_carry_over(version: DictionaryVersion) -> ReleaseCarryOver:
    """A queued carry-over row for a new release, its task sent after commit (best effort: when the broker is
    down the row stays queued and the diff page offers to run it)."""
    from webapp.core.queue import enqueue

    record, _ = ReleaseCarryOver.objects.update_or_create(
        version=version, defaults={"state": ReleaseCarryOver.State.QUEUED, "error": "", "finished_at": None})
    enqueue(CARRY_OVER_TASK, version.pk)
    return record


def queue_release_index(version: DictionaryVersion) -> str:
    """Queue a build of an index over ``version`` with the active index's encoder and first stage, not activated
    when built; says what it did (or why nothing: no active index, it serves this release, one is there already)."""
    from webapp.core.queue import enqueue, job_task_id
    from webapp.training.models import IndexVersion
    from webapp.training.services import create_index_version

    active = (IndexVersion.objects.filter(dictionary_id=version.dictionary_id, state=IndexVersion.State.ACTIVE)
              .select_related("encoder", "first_stage").first())
    if active is None:
        return "no index of this dictionary is active: none was built for the new release"
    if active.dictionary_version_id == version.pk:
        return f"the active index {active.pk} already serves this release"
    same = IndexVersion.objects.filter(dictionary_version=version, encoder=active.encoder, first_stage=active.first_stage)
    existing = same.exclude(state__in=[IndexVersion.State.FAILED, IndexVersion.State.CANCELLED]).order_by("-pk").first()
    if existing is not None:
        return f"index {existing.pk} over this release with the active index's encoder is {existing.get_state_display().lower()}"
    with transaction.atomic():
        index = create_index_version(version, active.encoder, None, active.first_stage, activate=False)
        enqueue("tasks.indexing.build_index_task", index.pk, False, task_id=job_task_id(index),
                on_failure=partial(_index_unqueued, index.pk))
    encoder = active.encoder.name if active.encoder_id else "tf-idf only"
    return f"index {index.pk} queued over this release with the active index's encoder ({encoder}); not activated when built"


def _index_unqueued(index_id: int, exc: Exception) -> None:
    from webapp.training.models import IndexVersion

    IndexVersion.objects.filter(pk=index_id, state=IndexVersion.State.BUILDING).update(
        state=IndexVersion.State.FAILED, error=str(exc), finished_at=Now())


def release_index_builds(version: DictionaryVersion) -> QuerySet[Any]:
    """The index versions over a release, newest first (the diff page shows the pending build)."""
    from webapp.training.models import IndexVersion

    return IndexVersion.objects.filter(dictionary_version=version).select_related(
        "dictionary", "dictionary_version", "encoder", "first_stage").order_by("-created_at")
