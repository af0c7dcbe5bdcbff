"""Which index version and which detector version serve a dictionary: the queries serving asks of the database.

Every page, worker and linker that needs "the active index of this dictionary" (or its active tagger) asks here.
The models (:class:`~webapp.linking.models.IndexVersion`, :class:`~webapp.linking.models.DetectorVersion`) are
serving's; training, above it, builds, trains and promotes them. At most one version of each is active per
dictionary; the database enforces it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from django.db.models import QuerySet

from webapp.linking.models import DetectorVersion, IndexVersion

__all__ = ["Artifact", "active_detector", "active_detector_ids", "active_index", "active_index_by_slug",
           "active_index_ids", "has_active_index", "index_created_at"]


class Artifact(Protocol):
    """A served version as a loader sees it: its id (the process's cache key) and the folder it loads from."""

    @property
    def pk(self) -> Any: ...

    @property
    def artifact_path(self) -> str: ...


def active_index(dictionary_id: int) -> IndexVersion | None:
    """The index serving the dictionary (with its dictionary, dictionary version and encoder); None without one."""
    return _active_indexes().filter(dictionary_id=dictionary_id).first()


def active_index_by_slug(dictionary_slug: str) -> IndexVersion | None:
    """As :func:`active_index`, the dictionary named by its slug."""
    return _active_indexes().filter(dictionary__slug=dictionary_slug).first()


def has_active_index(dictionary_id: int) -> bool:
    """Whether the dictionary serves candidates: an index of it is active (a new dictionary has none yet)."""
    return IndexVersion.objects.filter(dictionary_id=dictionary_id, state=IndexVersion.State.ACTIVE).exists()


def active_index_ids() -> set[int]:
    """The ids of every active index (what a process may keep loaded)."""
    return set(IndexVersion.objects.filter(state=IndexVersion.State.ACTIVE).values_list("pk", flat=True))


def index_created_at(index_id: int) -> datetime:
    """When an index version was created: its build read the curator names made before it."""
    return IndexVersion.objects.filter(pk=index_id).values_list("created_at", flat=True).get()


def active_detector(dictionary_slug: str) -> DetectorVersion | None:
    """The detector version finding the dictionary's mentions; None when none is active."""
    return (DetectorVersion.objects.filter(dictionary__slug=dictionary_slug, state=DetectorVersion.State.ACTIVE)
            .only("pk", "label", "artifact_path", "mention_types").first())


def active_detector_ids() -> set[int]:
    """The ids of every active detector version (what a process may keep loaded)."""
    return set(DetectorVersion.objects.filter(state=DetectorVersion.State.ACTIVE).values_list("pk", flat=True))


def _active_indexes() -> QuerySet[IndexVersion]:
    return (IndexVersion.objects.select_related("dictionary", "dictionary_version", "encoder")
            .filter(state=IndexVersion.State.ACTIVE))
