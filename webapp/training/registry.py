"""The linker each process serves, loaded lazily once per index version and kept for the process's life.

Web processes and workers ask for a dictionary's active linker on every request; the database says which
index version is active, and the loaded Linker is cached under that version's id. After a promotion the
next request loads the new index, while requests already holding the old Linker object finish on it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from linker.linker import Linker
from webapp.training.models import IndexVersion
from webapp.vocab.models import DictionaryVersion

_lock = threading.Lock()
_loaded: dict[int, Linker] = {}


@dataclass(frozen=True)
class ActiveLinker:
    linker: Linker
    index_version_id: int
    label: str
    dictionary_version: DictionaryVersion


def get_active_linker(dictionary_slug: str) -> ActiveLinker | None:
    index = (
        IndexVersion.objects.select_related("dictionary", "dictionary_version", "encoder")
        .filter(dictionary__slug=dictionary_slug, state=IndexVersion.State.ACTIVE)
        .first()
    )
    if index is None:
        return None
    return ActiveLinker(load_linker(index), index.pk, index.label, index.dictionary_version)


def load_linker(index: IndexVersion) -> Linker:
    linker = _loaded.get(index.pk)
    if linker is None:
        with _lock:
            linker = _loaded.get(index.pk)
            if linker is None:
                linker = Linker.load(index.artifact_path)
                # Keep only what is still served: a retired index's memory goes back after a promotion.
                live = set(IndexVersion.objects.filter(state=IndexVersion.State.ACTIVE).values_list("pk", flat=True))
                for stale in [pk for pk in _loaded if pk not in live]:
                    del _loaded[stale]
                _loaded[index.pk] = linker
    return linker


def forget_all() -> None:
    """Drop every loaded linker (tests; a worker told to reload)."""
    with _lock:
        _loaded.clear()
