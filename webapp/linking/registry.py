"""The linker each process serves: the one door to a dictionary's active index, curator synonyms kept in step.

Web processes (the curation panel, ``POST /api/link``) and workers (stored suggestions) all ask
:func:`get_active_linker`. The database says which index version is active; the loaded Linker is cached under
that version's id for the process's life. After a promotion the next request loads the new index, while
requests already holding the old Linker object finish on it.

Curator synonyms reach a loaded index without a rebuild. A decision adds its synonym to this process's index
after commit (:func:`add_curator_synonym`); other processes learn of it here: before handing out the linker,
:func:`get_active_linker` adds every curator Name created since this process last looked (a primary-key range
scan, nearly always empty, at most once per ``RECHECK_SECONDS``). A fresh index build reads curator names from
the database anyway.

An undo takes its synonym back the same way: this process's index forgets it after the undo commits
(:func:`forget_curator_synonym`, :meth:`linker.linker.Linker.remove_names`), and the undo leaves a
:class:`webapp.vocab.models.RemovedName` row that other processes read on their next lookup. A name is only taken
out of an index when no other name of the concept has the same normalised form (a dictionary name "Colon cancer"
and a curator's "colon cancer" are one row of the index).
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db import transaction

from linker.linker import Linker
from linker.text import normalize
from webapp.linking.devices import serving_device
from webapp.linking.versions import Artifact, active_index_by_slug, active_index_ids, index_created_at
from webapp.vocab.models import DictionaryVersion, Name, RemovedName

__all__ = ["ActiveLinker", "RECHECK_SECONDS", "add_curator_synonym", "add_curator_synonyms", "forget_all", "get_active_linker",
           "load_linker", "forget_curator_synonym", "remove_curator_synonyms"]

log = logging.getLogger(__name__)

# How stale another process's synonyms may be here: one look at the database per second at most, so a
# curator moving through mentions does not pay for a query per panel.
RECHECK_SECONDS = 1.0


@dataclass(frozen=True)
class ActiveLinker:
    linker: Linker
    index_version_id: int
    label: str
    dictionary_version: DictionaryVersion


@dataclass
class _Watermark:
    """How far this process has read the curator names of one loaded index."""

    last_name_pk: int | None = None  # None: this process has not looked yet
    last_removed_pk: int = 0  # the newest RemovedName applied (set at the first look)
    checked_at: float = 0.0  # time.monotonic() of the last look
    names_added: int = 0
    # Curator names this process's own decisions added (text, concept id), not yet met again in the database:
    # the next look skips them once each, so that every process counts each curator name once.
    own: Counter[tuple[str, str]] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)


_lock = threading.Lock()
_loaded: dict[int, Linker] = {}
_marks: dict[int, _Watermark] = {}


def get_active_linker(dictionary_slug: str) -> ActiveLinker | None:
    """The dictionary's active linker with every curator synonym of its dictionary version added; None without one."""
    active = _active_index(dictionary_slug)
    if active is not None:
        _catch_up_synonyms(active)
    return active


def add_curator_synonym(dictionary_slug: str, text: str, concept_id: str) -> None:
    """Add one curator synonym to this process's live index (called after the decision commits)."""
    add_curator_synonyms(dictionary_slug, [(text, concept_id)])


def add_curator_synonyms(dictionary_slug: str, pairs: Sequence[tuple[str, str]]) -> None:
    """Add (text, concept id) curator synonyms to this process's live index, in order, with one look at which
    index is active (a decision propagated to thousands of identical mentions commits one pair for each)."""
    active = _active_index(dictionary_slug)
    if active is None or not pairs:
        return
    mark = _mark(active.index_version_id)
    with mark.lock:
        added = active.linker.add_names(pairs)
        mark.names_added += len(added)
        mark.own.update(pairs)


def forget_curator_synonym(name: Name) -> None:
    """Record that an undo deletes the curator synonym ``name`` (call before deleting it, in the undo's transaction):
    a RemovedName row for the other processes, and this process's live index forgets it once the undo commits."""
    version_id, text, concept_id = name.concept.version_id, name.text, name.concept.concept_id
    RemovedName.objects.create(version_id=version_id, concept_id=concept_id, text=text)
    transaction.on_commit(lambda: remove_curator_synonyms(version_id, [(text, concept_id)]))


def remove_curator_synonyms(dictionary_version_id: int, pairs: Sequence[tuple[str, str]]) -> None:
    """Take (text, concept id) curator synonyms of a dictionary version out of this process's live index, when the
    active index serves that version (an index of another release keeps its own copy of a carried synonym)."""
    slug = DictionaryVersion.objects.filter(pk=dictionary_version_id).values_list("dictionary__slug", flat=True).first()
    active = _active_index(slug) if slug is not None else None
    if active is None or active.dictionary_version.pk != dictionary_version_id or not pairs:
        return
    mark = _mark(active.index_version_id)
    with mark.lock:
        _remove(active, mark, pairs)


def _remove(active: ActiveLinker, mark: _Watermark, pairs: Sequence[tuple[str, str]]) -> None:
    """Remove the pairs no name of the database still gives (the same normalised form on the same concept)."""
    for pair in pairs:  # a name of this process's taken back before its next look: that look will not meet it
        mark.own.pop(pair, None)
    gone = [(text, cid) for text, cid in pairs if not Name.objects.filter(
        concept__version=active.dictionary_version, concept__concept_id=cid, normalized=normalize(text)).exists()]
    removed = active.linker.remove_names(gone)
    if removed:
        log.info("index %s: %d curator synonym(s) taken back live", active.index_version_id, len(removed))


def load_linker(index: Artifact) -> Linker:
    """The Linker of one index version, loaded once per process (evaluation of a given version uses it too).

    Serving code asks :func:`get_active_linker` instead, which also keeps curator synonyms in step.
    """
    linker = _loaded.get(index.pk)
    if linker is None:
        with _lock:
            linker = _loaded.get(index.pk)
            if linker is None:
                # LINKER_SERVING_DEVICE: the CPU unless set (webapp.linking.devices says why).
                linker = Linker.load(index.artifact_path, device=serving_device())
                # Keep only what is still served: a retired index's memory goes back after a promotion.
                live = active_index_ids()
                for stale in [pk for pk in _loaded if pk not in live]:
                    del _loaded[stale]
                    _marks.pop(stale, None)
                _loaded[index.pk] = linker
                _settle_heap()
    return linker


def _settle_heap() -> None:
    """Put the loaded linkers out of the cyclic garbage collector's reach (gc.freeze).

    A linker is millions of long-lived objects (3.7M at 3M names); every full collection walked them all, 1.1 s at
    3M names, and stalled whichever panel triggered it. Frozen objects are still freed by reference counting when a
    linker is dropped; the collection before the freeze reclaims cycles a dropped one left (once per load).
    """
    gc.unfreeze()
    gc.collect()
    gc.freeze()


def forget_all() -> None:
    """Drop every loaded linker and what it was told of curator synonyms (tests; a worker told to reload)."""
    with _lock:
        _loaded.clear()
        _marks.clear()


def _active_index(dictionary_slug: str) -> ActiveLinker | None:
    index = active_index_by_slug(dictionary_slug)
    if index is None:
        return None
    return ActiveLinker(load_linker(index), index.pk, index.label, index.dictionary_version)


def _mark(index_version_id: int) -> _Watermark:
    with _lock:
        return _marks.setdefault(index_version_id, _Watermark())


def _catch_up_synonyms(active: ActiveLinker) -> None:
    """Add the curator names other processes recorded since this one last looked."""
    mark = _mark(active.index_version_id)
    if time.monotonic() - mark.checked_at < RECHECK_SECONDS:
        return
    with mark.lock:
        mark.checked_at = time.monotonic()
        names = Name.objects.filter(source=Name.Source.CURATOR, concept__version=active.dictionary_version)
        removals = RemovedName.objects.filter(version=active.dictionary_version)
        if mark.last_name_pk is None:
            # First look in this process: curator names the build may have missed (made while or after it ran).
            built = index_created_at(active.index_version_id)
            names = names.filter(created_at__gte=built)
            removals = removals.filter(removed_at__gte=built)
            mark.last_name_pk = Name.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
            mark.last_removed_pk = RemovedName.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
        else:
            names = names.filter(pk__gt=mark.last_name_pk)
            removals = removals.filter(pk__gt=mark.last_removed_pk)
        taken_back = list(removals.order_by("pk").values_list("pk", "text", "concept_id"))
        rows = list(names.order_by("pk").values_list("pk", "text", "concept__concept_id"))
        if rows:
            mark.last_name_pk = max(mark.last_name_pk or 0, rows[-1][0])
            # This process's own decisions added theirs already (add_curator_synonyms): adding a pair again would
            # count it twice in its support (a tie-break, a re-ranker feature) here and once elsewhere.
            new = []
            for _, text, cid in rows:
                if mark.own[(text, cid)] > 0:
                    mark.own[(text, cid)] -= 1
                else:
                    new.append((text, cid))
            mark.own = +mark.own  # drop the zeros
            added = active.linker.add_names(new) if new else []
            mark.names_added += len(added)
            if added:
                log.info("index %s: %d curator synonym(s) added live", active.index_version_id, len(added))
        if taken_back:
            # After the additions: a name removed and made again since the last look is in the database, and stays.
            mark.last_removed_pk = max(mark.last_removed_pk, taken_back[-1][0])
            _remove(active, mark, [(text, cid) for _, text, cid in taken_back])
