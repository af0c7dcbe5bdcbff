"""A dictionary's releases side by side: what changed between two, and which concepts survive into the newer one.

- :func:`release_diff`: concepts added, removed, merged (an old id that a concept of the new release lists as an
  alternative id: MEDIC AltDiseaseIDs, OBO alt_id), obsoleted (OBO terms imported with their obsolete flag),
  renamed (preferred name changed) and dictionary names added/removed per concept. Only the release's own names
  are compared: curator synonyms are the carry-over's business, not the release's.
- :func:`survivors`: the concept of the new release that carries an old concept id on.
- :func:`queue_carry_over`: the carry-over of curator work to a new release, queued after its import. The
  carry-over itself reads the active index and the curated links, so it lives above vocab, in
  :mod:`webapp.training.releases` (README, "Layers").
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field

from django.core.cache import cache
from django.db.models import QuerySet

from webapp.vocab.models import Concept, DictionaryVersion, Name, ReleaseCarryOver

__all__ = [
    "ConceptRef", "Merged", "Renamed", "NameChange", "ReleaseDiff", "release_diff", "previous_release", "default_pair",
    "survivors", "queue_carry_over", "CARRY_OVER_TASK",
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


# --- queueing after an import -------------------------------------------------------------------------------


def queue_carry_over(version: DictionaryVersion) -> ReleaseCarryOver:
    """A queued carry-over row for a new release, its task sent after commit (best effort: when the broker is
    down the row stays queued and the diff page offers to run it)."""
    from webapp.core.queue import enqueue

    record, _ = ReleaseCarryOver.objects.update_or_create(
        version=version, defaults={"state": ReleaseCarryOver.State.QUEUED, "error": "", "finished_at": None})
    enqueue(CARRY_OVER_TASK, version.pk)
    return record
