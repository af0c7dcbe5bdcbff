"""The mention detector each process serves: the one door to a dictionary's active tagger.

Whoever detects mentions (document imports, the curation pages, workers) asks :func:`get_active_tagger`: the
database says which detector version is active (:func:`webapp.linking.versions.active_detector`), and its
:class:`linker.detect.tagger.Tagger` is loaded once per process, cached under that version's id. After an
activation (:func:`webapp.training.detectors.activate_detector`, training's switch) the next call loads the new
one; a caller holding the old tagger finishes with it. A version that no longer serves is dropped from the cache
when another is loaded (its memory goes back), as for linkers (:func:`webapp.linking.registry.load_linker`).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from webapp.artifacts.local import ensure_local
from webapp.linking.versions import Artifact, active_detector, active_detector_ids

if TYPE_CHECKING:
    from linker.detect.tagger import Tagger

__all__ = ["ActiveTagger", "TAGGER_FILE", "forget_all", "get_active_tagger", "load_tagger"]


@dataclass(frozen=True)
class ActiveTagger:
    tagger: Tagger
    label: str  # stored on every mention it finds (Mention.model_version): "tagger-run-12"
    detector_version_id: int
    mention_types: tuple[str, ...] = ()  # the types it was trained on; empty: every type


logger = logging.getLogger(__name__)

# linker.detect.tagger.TAGGER_FILE, named here so that a web request checking a folder does not import torch.
TAGGER_FILE = "tagger.json"
_lock = threading.Lock()
_loaded: dict[int, Tagger] = {}


def get_active_tagger(dictionary_slug: str) -> ActiveTagger | None:
    """The dictionary's active tagger, loaded once per process; None when no detector version is active."""
    version = active_detector(dictionary_slug)
    if version is None:
        return None
    return ActiveTagger(load_tagger(version), version.label, version.pk, tuple(version.mention_types or ()))


def load_tagger(version: Artifact) -> Tagger:
    """The tagger of one detector version, loaded once per process (a ready one too: to try it before activating),
    predicting with the ``TAGGER_RUNTIME`` setting's runtime."""
    tagger = _loaded.get(version.pk)
    if tagger is None:
        with _lock:
            tagger = _loaded.get(version.pk)
            if tagger is None:
                from linker.detect.tagger import Tagger

                tagger = _with_runtime(Tagger.load(ensure_local(version.artifact_path)))
                # Keep only what still serves: a retired tagger's memory goes back after a switch.
                live = active_detector_ids()
                for stale in [pk for pk in _loaded if pk not in live]:
                    del _loaded[stale]
                _loaded[version.pk] = tagger
    return tagger


def _with_runtime(tagger: Tagger) -> Tagger:
    """The tagger predicting with ``TAGGER_RUNTIME`` (linker.detect.onnx_tagger), its export cached on this host
    under ``ARTIFACT_ROOT/cache/onnx``. A tagger on a GPU keeps torch; an export that fails keeps torch, logged."""
    from django.conf import settings

    from linker.detect.onnx_tagger import use_runtime

    runtime = settings.TAGGER_RUNTIME
    if runtime == "torch" or tagger.device.type != "cpu":
        return tagger
    try:
        return use_runtime(tagger, runtime, Path(settings.ARTIFACT_ROOT) / "cache" / "onnx")
    except Exception:
        logger.exception("the tagger could not be run by %s; it detects with torch", runtime)
        return tagger


def forget_all() -> None:
    """Drop every loaded tagger (tests; a process told to reload)."""
    with _lock:
        _loaded.clear()
