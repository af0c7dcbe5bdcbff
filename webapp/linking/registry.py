"""The linker each process serves: the one door to a dictionary's active index and the curator names made since
its build.

Web processes (the curation panel, ``POST /api/link``) and workers (stored suggestions) all ask
:func:`get_active_linker`. The database says which index version is active; its artifact is loaded once per process
(:func:`load_linker`) and never changed. After a promotion the next lookup loads the new index, while requests
already holding the old Linker object finish on it.

What curators added or took back since the build is the index's delta, and the database holds it: the curator Names
of the index's dictionary version made since the build, and the names undone since (:class:`RemovedName` rows,
written in the undo's transaction) that no Name of their concept still gives (a dictionary name "Colon cancer" and a
curator's "colon cancer" are one name of the index). The linker handed out is the loaded one with that delta
(:meth:`linker.linker.Linker.with_delta`), which ranks as a fresh build over the same names would; it is a snapshot:
a caller holding it sees no later synonym.

Which version is active is asked of the database at most once per ``RECHECK_SECONDS`` (a promotion in another
process is served within a second, one in this process at once). One rule says when the delta is stale: its
watermark, the newest Name and RemovedName rows read for it. At most once per ``RECHECK_SECONDS`` a lookup asks the
database for newer rows (two primary-key range scans, nearly always empty); a decision or undo committed in this
process makes its next lookup ask at once (:func:`add_curator_synonyms`, :func:`forget_curator_synonym`). A delta that changed is a new linker object: whatever was kept per linker (the
panel's rankings) is the old one's.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.db import transaction

from linker.text import normalize
from webapp.artifacts.local import ensure_local
from webapp.linking.devices import serving_device
from webapp.linking.models import IndexVersion
from webapp.linking.versions import Artifact, active_index_by_slug, active_index_ids, index_created_at
from webapp.vocab.models import DictionaryVersion, Name, RemovedName

if TYPE_CHECKING:  # imported where a linker is loaded or served: django.setup() imports no torch (issue #45)
    from linker.delta import DeltaVectors
    from linker.linker import Linker

__all__ = ["ActiveLinker", "RECHECK_SECONDS", "add_curator_synonym", "add_curator_synonyms", "forget_all", "forget_active_indexes",
           "get_active_linker", "index_version_changed", "load_linker", "forget_curator_synonym", "remove_curator_synonyms",
           "served_indexes"]

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


def _delta_vectors() -> DeltaVectors:
    from linker.delta import DeltaVectors

    return DeltaVectors()


@dataclass
class _Served:
    """One loaded index's delta as this process last read it, and the linker that serves it."""

    base: Linker
    linker: Linker
    added: dict[tuple[str, str], None] = field(default_factory=dict)  # curator (text, concept id), in order made
    removed: set[tuple[str, str]] = field(default_factory=set)  # base names undone that no Name still gives
    last_name_pk: int | None = None  # the watermark; None: not read yet
    last_removed_pk: int = 0
    checked_at: float = 0.0  # time.monotonic() of the last look
    stale: bool = True  # a decision of this process committed since: look now
    vectors: DeltaVectors = field(default_factory=_delta_vectors)  # the delta names' vectors, by name
    lock: threading.Lock = field(default_factory=threading.Lock)


_lock = threading.Lock()
_loaded: dict[int, Linker] = {}
_served: dict[int, _Served] = {}
_active: dict[str, tuple[float, IndexVersion | None]] = {}  # dictionary slug -> (when asked, its active index)


def get_active_linker(dictionary_slug: str) -> ActiveLinker | None:
    """The dictionary's active linker with the curator names of its dictionary version; None without one."""
    index = _active_index(dictionary_slug)
    if index is None:
        return None
    base = load_linker(index)
    with _lock:
        served = _served.get(index.pk)
        if served is None or served.base is not base:
            served = _served[index.pk] = _Served(base, base)
    _read_delta(served, index.pk, index.dictionary_version)
    return ActiveLinker(served.linker, index.pk, index.label, index.dictionary_version)


def _active_index(dictionary_slug: str) -> IndexVersion | None:
    """The dictionary's active index version, asked of the database at most once per ``RECHECK_SECONDS`` (a
    panel asks two or three times per request); a version saved or deleted in this process asks again at once."""
    now = time.monotonic()
    kept = _active.get(dictionary_slug)
    if kept is not None and now - kept[0] < RECHECK_SECONDS:
        return kept[1]
    index = active_index_by_slug(dictionary_slug)
    _active[dictionary_slug] = (now, index)
    return index


def forget_active_indexes() -> None:
    """Ask the database which index is active at the next lookup."""
    _active.clear()


def index_version_changed(**_: object) -> None:
    """An index version of this process was saved or deleted (IndexVersion's post_save and post_delete): ask which
    is active now, and again once the change commits (a lookup in between still read the version before it)."""
    _active.clear()
    transaction.on_commit(_active.clear)


def add_curator_synonym(dictionary_slug: str, text: str, concept_id: str) -> None:
    """A decision of this process committed a curator synonym: the next lookup reads the delta at once."""
    _look_again()


def add_curator_synonyms(dictionary_slug: str, pairs: Sequence[tuple[str, str]]) -> None:
    """As :func:`add_curator_synonym`, for the pairs a propagated decision committed."""
    _look_again()


def forget_curator_synonym(name: Name) -> None:
    """Record that an undo deletes the curator synonym ``name`` (call before deleting it, in the undo's transaction):
    the RemovedName row every process reads, and this process's next lookup reads it at once after commit."""
    RemovedName.objects.create(version_id=name.concept.version_id, concept_id=name.concept.concept_id, text=name.text)
    transaction.on_commit(_look_again)


def remove_curator_synonyms(dictionary_version_id: int, pairs: Sequence[tuple[str, str]]) -> None:
    """Curator synonyms of a dictionary version were taken back (their RemovedName rows committed): the next lookup
    reads the delta at once."""
    _look_again()


def _look_again() -> None:
    with _lock:
        for served in _served.values():
            served.stale = True


def _read_delta(served: _Served, index_version_id: int, version: DictionaryVersion) -> None:
    """Bring ``served`` up to the database's delta when it may be stale: the rows after its watermark."""
    if not served.stale and time.monotonic() - served.checked_at < RECHECK_SECONDS:
        return
    with served.lock:
        if not served.stale and time.monotonic() - served.checked_at < RECHECK_SECONDS:
            return  # another thread has just looked
        served.stale, served.checked_at = False, time.monotonic()
        names = Name.objects.filter(source=Name.Source.CURATOR, concept__version=version)
        removals = RemovedName.objects.filter(version=version)
        if served.last_name_pk is None:
            # First look in this process: the curator names the build may have missed (made while or after it ran).
            built = index_created_at(index_version_id)
            names, removals = names.filter(created_at__gte=built), removals.filter(removed_at__gte=built)
            served.last_name_pk = Name.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
            served.last_removed_pk = RemovedName.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
        else:
            names, removals = names.filter(pk__gt=served.last_name_pk), removals.filter(pk__gt=served.last_removed_pk)
        made = list(names.order_by("pk").values_list("pk", "text", "concept__concept_id"))
        undone = list(removals.order_by("pk").values_list("pk", "text", "concept_id"))
        if not made and not undone:
            return
        for _, text, cid in made:
            served.added[(text, cid)] = None
            served.removed = {(t, c) for t, c in served.removed if c != cid or normalize(t) != normalize(text)}
        if undone:
            _apply_undone(served, version, {(text, cid) for _, text, cid in undone})
        served.last_name_pk = max(served.last_name_pk, made[-1][0] if made else 0)
        served.last_removed_pk = max(served.last_removed_pk, undone[-1][0] if undone else 0)
        from linker.delta import Delta

        delta = Delta(tuple(served.added), frozenset(served.removed), (served.last_name_pk, served.last_removed_pk))
        served.linker = served.base.with_delta(delta, served.vectors) if delta else served.base
        log.info("index %s: serving %d curator name(s) added and %d taken back since its build", index_version_id,
                 len(delta.added), len(delta.removed))


def _apply_undone(served: _Served, version: DictionaryVersion, pairs: set[tuple[str, str]]) -> None:
    """Undone (text, concept id) pairs: out of the delta's names unless a Name still is that pair, and out of the
    base's unless a Name of the concept still has its normalised form (made again since, or a dictionary name)."""
    live = set(Name.objects.filter(concept__version=version, concept__concept_id__in={cid for _, cid in pairs})
               .values_list("concept__concept_id", "text", "normalized"))
    texts = {(cid, text) for cid, text, _ in live}
    normalised = {(cid, normal) for cid, _, normal in live}
    for text, cid in pairs:
        if (cid, text) not in texts:
            served.added.pop((text, cid), None)
        if (cid, normalize(text)) not in normalised:
            served.removed.add((text, cid))


def load_linker(index: Artifact) -> Linker:
    """The Linker of one index version as built, loaded once per process (evaluation of a given version uses it too).

    Serving code asks :func:`get_active_linker` instead, which adds the curator names made since the build.
    """
    from linker.linker import Linker

    linker = _loaded.get(index.pk)
    if linker is None:
        with _lock:
            linker = _loaded.get(index.pk)
            if linker is None:
                # LINKER_SERVING_DEVICE: the CPU unless set (webapp.linking.devices says why).
                # Fetched from the artifact store when another host built it (webapp.artifacts).
                # Its searches are kept per query (Linker.remember_searches): a served linker never changes.
                linker = Linker.load(ensure_local(index.artifact_path), device=serving_device()).remember_searches()
                # Keep only what is still served: a retired index's memory goes back after a promotion.
                live = active_index_ids()
                for stale in [pk for pk in _loaded if pk not in live]:
                    del _loaded[stale]
                    _served.pop(stale, None)
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


def served_indexes() -> tuple[int, ...]:
    """The ids of the index versions this process has loaded, in order (read-only: the metrics endpoint's
    ``workbench_serving_index``, which says what each web host serves). A retired index drops out at the next load."""
    with _lock:
        return tuple(sorted(_loaded))


def forget_all() -> None:
    """Drop every loaded linker and the deltas read for them (tests; a worker told to reload)."""
    with _lock:
        _loaded.clear()
        _served.clear()
        _active.clear()
