"""The switch of a dictionary's mention detector: which trained tagger serves it (serving itself is
:mod:`webapp.linking.taggers`).

A tagger run makes a ``ready`` :class:`~webapp.linking.models.DetectorVersion`; an admin activates it
(:func:`activate_detector`: the one active before it retired, the new one active, in one transaction under a row
lock, the database allowing one active per dictionary whatever happens). Every process serving taggers loads the
new one on its next lookup (:func:`webapp.linking.taggers.get_active_tagger`).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from webapp.artifacts.manifests import is_available
from webapp.audit import actions
from webapp.audit.events import record
from webapp.linking.models import DetectorVersion
from webapp.linking.taggers import TAGGER_FILE
from webapp.vocab.models import Dictionary

__all__ = ["DetectorActivationError", "activate_detector", "retire_detector"]


class DetectorActivationError(ValueError):
    """The detector version cannot be switched as asked; the message says why."""


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
    if not is_available(locked.artifact_path, TAGGER_FILE):  # here, or in the store (trained on another host)
        raise DetectorActivationError(f"detector {locked.label}: its folder {locked.artifact_path} is missing (or holds "
                                      f"no {TAGGER_FILE}): it could not be loaded")
    now = timezone.now()
    previous = DetectorVersion.objects.filter(dictionary_id=locked.dictionary_id, state=DetectorVersion.State.ACTIVE)
    replaced = previous.values_list("pk", flat=True).first()
    previous.update(state=DetectorVersion.State.RETIRED, retired_at=now)
    locked.state, locked.activated_at, locked.retired_at = DetectorVersion.State.ACTIVE, now, None
    locked.activated_by = user if getattr(user, "pk", None) else None
    locked.save(update_fields=["state", "activated_at", "retired_at", "activated_by"])
    record(actions.DETECTOR_ACTIVATED, actor=user, obj=locked, label=locked.label, before={"active_detector": replaced},
           after={"state": locked.state, "dictionary": locked.dictionary.slug}, link=reverse("training:models"))
    return locked


@transaction.atomic
def retire_detector(version: DetectorVersion | int, user: Any = None) -> DetectorVersion:
    """Stop a detector version serving (an active one: its dictionary then has none until another is activated), or
    set a ready one aside; a retired one stays as it is. It can be activated again later."""
    locked = _locked(version if isinstance(version, int) else version.pk)
    if locked.state != DetectorVersion.State.RETIRED:
        before = {"state": locked.state}
        locked.state, locked.retired_at = DetectorVersion.State.RETIRED, timezone.now()
        locked.save(update_fields=["state", "retired_at"])
        record(actions.DETECTOR_RETIRED, actor=user, obj=locked, label=locked.label, before=before,
               after={"state": locked.state}, link=reverse("training:models"))
    return locked
