"""Auto-accept: a collection may let the linker accept its own top-1 when its calibrated confidence is high.

A collection's ``auto_accept_threshold`` (empty: off) is compared with a mention's confidence, the product of
its parts' rank-1 confidences (``Link.confidence``, written with the suggestions by a calibrated linker). At
or above it, the mention is accepted through the one decision service, as the curator's accept would be,
but by the workbench's own user :data:`LINKER_USERNAME` with ``via=auto``: logged, undoable by an admin,
listed in the decision log, and never a curator synonym or training data (the linker agreeing with itself
teaches nothing; :mod:`webapp.training.dataset` and the retrain trigger leave such decisions out).

What a threshold buys is measured on dev by ``bench/learning_loop.py`` (precision of the accepted mentions and
the share accepted) and shown on the collection's settings.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.urls import reverse

from linker.calibration import mention_confidence
from webapp.audit import actions
from webapp.audit.events import record
from webapp.corpus.models import Document, Link, Mention
from webapp.curation.models import Decision
from webapp.curation.services.decision_rows import part_count
from webapp.curation.services.decisions import Conflict, decide
from webapp.curation.services.errors import CurationError

logger = logging.getLogger(__name__)

LINKER_USERNAME = "linker"


def linker_user() -> Any:
    """The account auto-accepted decisions are made by: inactive, no password (nobody can log in as it)."""
    user, created = get_user_model().objects.get_or_create(
        username=LINKER_USERNAME, defaults={"is_active": False, "first_name": "Linker (auto-accept)"}
    )
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


def thresholds(document_ids: Iterable[int]) -> dict[int, float]:
    """Document id -> its collection's auto-accept threshold, for the documents whose collection has one."""
    return dict(
        Document.objects.filter(pk__in=list(document_ids), collection__auto_accept_threshold__isnull=False)
        .values_list("pk", "collection__auto_accept_threshold")
    )


def stored_confidence(mention: Mention) -> float | None:
    """The mention's confidence from its stored rank-1 suggestions (None: a part without one, or uncalibrated)."""
    by_part = dict(
        mention.links.filter(origin=Link.Origin.MODEL, rank=1).values_list("part", "confidence")
    )
    return mention_confidence([by_part.get(p) for p in range(part_count(mention))])


def auto_accept(document_ids: Iterable[int], threshold_of: Mapping[int, float]) -> int:
    """Accept the suggested mentions of these documents whose confidence reaches their collection's threshold.

    Each accept is one decision in its own transaction; a mention a curator changed meanwhile (a conflict) is
    left to the curator. Returns the number accepted.
    """
    user = None
    accepted = 0
    mentions = Mention.objects.filter(document_id__in=list(document_ids), status=Mention.Status.SUGGESTED).order_by("pk")
    for mention in mentions:
        threshold = threshold_of.get(mention.document_id)
        confidence = stored_confidence(mention)
        if threshold is None or confidence is None or confidence < threshold:
            continue
        user = user or linker_user()
        try:
            decide(user=user, mention_id=mention.pk, action=Decision.Action.ACCEPT, seen_updated_at=mention.updated_at,
                   part=None, via=Decision.Via.AUTO)
        except (Conflict, CurationError) as exc:
            logger.info("auto-accept left mention %s to the curators: %s", mention.pk, exc)
            continue
        accepted += 1
    return accepted


# --- the collection's setting ---------------------------------------------------------------------------------

MIN_THRESHOLD = 0.5  # below, the linker's top-1 is more likely wrong than right: no "auto-accept" worth the name


def set_threshold(collection_id: int, raw: str, user: Any = None) -> float | None:
    """Set (or, with an empty ``raw``, turn off) a collection's auto-accept threshold; a ValueError names what is
    wrong with ``raw``. Returns the threshold set. ``user``: who (the audit log's actor)."""
    text = raw.strip().rstrip("%").strip()
    if not text:
        threshold = None
    else:
        try:
            threshold = float(text)
        except ValueError:
            raise ValueError(f"“{raw}” is not a number: give a confidence between {MIN_THRESHOLD} and 1, e.g. 0.95") from None
        if raw.strip().endswith("%") or threshold > 1:
            threshold /= 100  # "95" or "95 %" means 0.95
        if not MIN_THRESHOLD <= threshold <= 1:
            raise ValueError(f"the threshold must be between {MIN_THRESHOLD} and 1 (between {MIN_THRESHOLD:.0%} and 100%), "
                             f"not {raw.strip()}")
    from webapp.corpus.models import Collection

    with transaction.atomic():
        collection = Collection.objects.select_for_update().get(pk=collection_id)
        before = collection.auto_accept_threshold
        Collection.objects.filter(pk=collection_id).update(auto_accept_threshold=threshold)
        if before != threshold:
            record(actions.SETTINGS_CHANGED, actor=user, obj=collection, label=f"auto-accept of {collection.slug}",
                   before={"auto_accept_threshold": before}, after={"auto_accept_threshold": threshold},
                   link=reverse("curation:dashboard", args=[collection.slug]))
    return threshold


def auto_accepted(collection_id: int) -> int:
    """How many of the collection's mentions the linker accepted on its own (not undone)."""
    return Decision.objects.filter(document__collection_id=collection_id, via=Decision.Via.AUTO, undone_at__isnull=True).count()
