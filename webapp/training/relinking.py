"""How far the re-linking after an activation has come: per collection of the dictionary, its open mentions and how
many carry the new index's suggestions (:func:`webapp.training.services.promote_index` queues the re-linking on a
worker; the pages that show it poll these counts until they meet)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Count, Exists, OuterRef, Q
from django.utils import timezone

from webapp.corpus.models import Collection, Link, Mention
from webapp.linking.models import IndexVersion

# Open: what the re-linking touches (a decided mention keeps the suggestions it was decided on).
OPEN = (Mention.Status.PENDING, Mention.Status.SUGGESTED)
# Pages stop waiting for the re-linking this long after an activation: a mention the linker finds no candidate
# for never gets one, and a collection imported later is linked by its "Suggest" button, not by the activation.
WATCH = timedelta(minutes=10)


@dataclass(frozen=True)
class Relinking:
    collection: Collection
    open: int  # open mentions
    linked: int  # of them, with the index's suggestions

    @property
    def done(self) -> bool:
        return self.linked >= self.open

    @property
    def percent(self) -> int:
        return 100 * self.linked // self.open if self.open else 100


def relinking(index: IndexVersion, collections: list[Collection] | None = None) -> list[Relinking]:
    """Per collection of the index's dictionary (or of ``collections``), by slug: its open mentions and how many of
    them carry this index's suggestions (one query)."""
    if collections is None:
        collections = list(Collection.objects.filter(dictionary_id=index.dictionary_id).order_by("slug"))
    by_index = Link.objects.filter(mention=OuterRef("pk"), origin=Link.Origin.MODEL, model_version=index.label)
    counts = {
        row["document__collection"]: (row["open"], row["linked"])
        for row in Mention.objects.filter(document__collection__in=collections, status__in=OPEN)
        .values("document__collection")
        .annotate(open=Count("pk"), linked=Count("pk", filter=Q(Exists(by_index))))
    }
    return [Relinking(c, *counts.get(c.pk, (0, 0))) for c in collections]


def watching(index: IndexVersion) -> bool:
    """Whether a page should still wait for this index's re-linking: it was activated lately."""
    return (index.state == IndexVersion.State.ACTIVE and index.activated_at is not None
            and timezone.now() - index.activated_at < WATCH)


@dataclass(frozen=True)
class CollectionLinking:
    """A collection's mentions against its dictionary's indexes: the one serving, one being built, and how many open
    mentions carry the serving index's suggestions. ``waiting``: new suggestions are on their way (an index is being
    built, or the one activated lately is still re-linking), so a page showing the suggestions should look again."""

    collection: Collection
    active: IndexVersion | None
    building: IndexVersion | None
    status: Relinking | None

    @property
    def waiting(self) -> bool:
        if self.building is not None:
            return True
        return self.active is not None and self.status is not None and not self.status.done and watching(self.active)


def collection_linking(collection: Collection) -> CollectionLinking:
    if collection.dictionary_id is None:
        return CollectionLinking(collection, None, None, None)
    indexes = IndexVersion.objects.filter(dictionary_id=collection.dictionary_id).select_related(
        "dictionary", "dictionary_version", "encoder")
    active = indexes.filter(state=IndexVersion.State.ACTIVE).first()
    building = indexes.filter(state=IndexVersion.State.BUILDING, activate_when_built=True).order_by("-pk").first()
    status = relinking(active, [collection])[0] if active is not None else None
    return CollectionLinking(collection, active, building, status)
