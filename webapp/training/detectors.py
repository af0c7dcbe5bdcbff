"""The mention detector each process serves: the one door to a dictionary's active tagger, and its switch.

A tagger run makes a ``ready`` :class:`~webapp.training.models.DetectorVersion`; an admin activates it
(:func:`activate_detector`: the one active before it retired, the new one active, in one transaction under a row
lock, the database allowing one active per dictionary whatever happens). Whoever detects mentions (document
imports, the curation pages, workers) asks :func:`get_active_tagger`: the database says which version is active,
and its :class:`linker.detect.tagger.Tagger` is loaded once per process, cached under that version's id. After
an activation the next call loads the new one; a caller holding the old tagger finishes with it. A version that no
longer serves is dropped from the cache when another is loaded (its memory goes back), as for linkers
(:func:`webapp.training.registry.load_linker`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.utils import timezone

from webapp.training.models import DetectorVersion
from webapp.vocab.models import Dictionary

if TYPE_CHECKING:
    from linker.detect.tagger import Tagger

__all__ = ["ActiveTagger", "DetectorActivationError", "activate_detector", "forget_all", "get_active_tagger",
           "load_tagger", "retire_detector"]


class DetectorActivationError(ValueError):
    """The detector version cannot be switched as asked; the message says why."""


@dataclass(frozen=True)
class ActiveTagger:
    tagger: Tagger
    label: str  # stored on every mention it finds (Mention.model_version): "tagger-run-12"
    detector_version_id: int
    mention_types: tuple[str, ...] = ()  # the types it was trained on; empty: every type


# linker.detect.tagger.TAGGER_FILE, named here so that a web request checking a folder does not import torch.
TAGGER_FILE = "tagger.json"
_lock = threading.Lock()
_loaded: dict[int, Tagger] = {}


def get_active_tagger(dictionary_slug: str) -> ActiveTagger | None:
    """The dictionary's active tagger, loaded once per process; None when no detector version is active."""
    version = (DetectorVersion.objects.filter(dictionary__slug=dictionary_slug, state=DetectorVersion.State.ACTIVE)
               .only("pk", "label", "artifact_path", "mention_types").first())
    if version is None:
        return None
    return ActiveTagger(load_tagger(version), version.label, version.pk, tuple(version.mention_types or ()))


def load_tagger(version: DetectorVersion) -> Tagger:
    """The tagger of one detector version, loaded once per process (a ready one too: to try it before activating)."""
    tagger = _loaded.get(version.pk)
    if tagger is None:
        with _lock:
            tagger = _loaded.get(version.pk)
            if tagger is None:
                from linker.detect.tagger import Tagger

                tagger = Tagger.load(version.artifact_path)
                # Keep only what still serves: a retired tagger's memory goes back after a switch.
                live = set(DetectorVersion.objects.filter(state=DetectorVersion.State.ACTIVE).values_list("pk", flat=True))
                for stale in [pk for pk in _loaded if pk not in live]:
                    del _loaded[stale]
                _loaded[version.pk] = tagger
    return tagger


def forget_all() -> None:
    """Drop every loaded tagger (tests; a process told to reload)."""
    with _lock:
        _loaded.clear()


def _locked(version_id: int) -> DetectorVersion:
    """The version, its dictionary row locked first (so that two switches of one dictionary serialise), then its own."""
    dictionary_id = DetectorVersion.objects.values_list("dictionary_id", flat=True).get(pk=version_id)
    Dictionary.objects.select_for_update().get(pk=dictionary_id)
    return DetectorVersion.objects.select_for_update().select_related("dictionary").get(pk=version_id)


@transaction.atomic
def activate_detector(version: DetectorVersion | int, user: Any = None) -> DetectorVersion:
    """Make a detector version the one its dictionary serves, retiring the one active before, in one transaction.

    The dictionary row is locked first, so two activations at once serialise; the partial unique index
    ``one_active_detector_per_dictionary`` guarantees one active even if something bypasses this. A version whose
    folder is gone is refused (it could not be loaded)."""
    locked = _locked(version if isinstance(version, int) else version.pk)
    if locked.state == DetectorVersion.State.ACTIVE:
        return locked
    if not (Path(locked.artifact_path) / TAGGER_FILE).is_file():
        raise DetectorActivationError(f"detector {locked.label}: its folder {locked.artifact_path} is missing (or holds "
                                      f"no {TAGGER_FILE}): it could not be loaded")
    now = timezone.now()
    DetectorVersion.objects.filter(dictionary_id=locked.dictionary_id, state=DetectorVersion.State.ACTIVE).update(
        state=DetectorVersion.State.RETIRED, retired_at=now)
    locked.state, locked.activated_at, locked.retired_at = DetectorVersion.State.ACTIVE, now, None
    locked.activated_by = user if getattr(user, "pk", None) else None
    locked.save(update_fields=["state", "activated_at", "retired_at", "activated_by"])
    return locked


@transaction.atomic
def retire_detector(version: DetectorVersion | int, user: Any = None) -> DetectorVersion:
    """Stop a detector version serving (an active one: its dictionary then has none until another is activated), or
    set a ready one aside; a retired one stays as it is. It can be activated again later."""
    locked = _locked(version if isinstance(version, int) else version.pk)
    if locked.state != DetectorVersion.State.RETIRED:
        locked.state, locked.retired_at = DetectorVersion.State.RETIRED, timezone.now()
        locked.save(update_fields=["state", "retired_at"])
    return locked
