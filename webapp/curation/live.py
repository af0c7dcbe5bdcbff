"""Keep the live index of this process in step with curator synonyms, without rebuilding it.

A decision adds its synonym to the loaded linker after commit (``transaction.on_commit``), so the next lookup
of that string in this process finds it. Other web processes and workers learn of it here: before linking,
:func:`active_linker` adds every curator Name created since this process last looked (a primary-key range
scan, nearly always empty). A fresh index build reads curator names from the database anyway.

An index cannot forget a name: a synonym removed by an undo stays findable in loaded indexes until the next
build or restart (its concept is still right for that string's curator, just no longer recorded).
Other processes see a new synonym within ``RECHECK_SECONDS``.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

from webapp.training.models import IndexVersion
from webapp.training.registry import ActiveLinker, get_active_linker
from webapp.vocab.models import Name

log = logging.getLogger(__name__)


@dataclass
class _Watermark:
    last_name_pk: int | None = None  # None: this process has not looked yet
    checked_at: float = 0.0  # time.monotonic() of the last look
    names_added: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


# How stale another process's synonyms may be here: one look at the database per second at most, so a
# curator moving through mentions does not pay for a query per panel.
RECHECK_SECONDS = 1.0

_marks: dict[int, _Watermark] = {}
_marks_lock = threading.Lock()


def _mark(index_version_id: int) -> _Watermark:
    with _marks_lock:
        return _marks.setdefault(index_version_id, _Watermark())


def active_linker(dictionary_slug: str) -> ActiveLinker | None:
    """The dictionary's active linker with every curator synonym of its dictionary version added."""
    active = get_active_linker(dictionary_slug)
    if active is None:
        return None
    mark = _mark(active.index_version_id)
    if time.monotonic() - mark.checked_at < RECHECK_SECONDS:
        return active
    with mark.lock:
        mark.checked_at = time.monotonic()
        names = Name.objects.filter(source=Name.Source.CURATOR, concept__version=active.dictionary_version)
        if mark.last_name_pk is None:
            # First look in this process: curator names the build may have missed (made while or after it ran).
            built = IndexVersion.objects.filter(pk=active.index_version_id).values_list("created_at", flat=True).get()
            names = names.filter(created_at__gte=built)
            mark.last_name_pk = Name.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
        else:
            names = names.filter(pk__gt=mark.last_name_pk)
        rows = list(names.order_by("pk").values_list("pk", "text", "concept__concept_id"))
        if rows:
            mark.last_name_pk = max(mark.last_name_pk or 0, rows[-1][0])
            added = active.linker.add_names([(text, cid) for _, text, cid in rows])
            mark.names_added += len(added)
            log.info("index %s: %d curator synonym(s) added live", active.index_version_id, len(added))
    return active


def add_synonym_now(dictionary_slug: str, text: str, concept_id: str) -> None:
    """Add one curator synonym to this process's live index (called after the decision commits)."""
    active = get_active_linker(dictionary_slug)
    if active is None:
        return
    mark = _mark(active.index_version_id)
    with mark.lock:
        added = active.linker.add_names([(text, concept_id)])
        mark.names_added += len(added)


def forget() -> None:
    """Tests: start over (the registry's ``forget_all`` drops the linkers themselves)."""
    with _marks_lock:
        _marks.clear()
