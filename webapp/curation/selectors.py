"""Read side of the curation pages: dashboard figures and the review queue; the candidate panel's data is
:mod:`webapp.curation.panel` (re-exported here) and the hierarchy around a candidate :mod:`webapp.curation.lineage`.

Nothing here writes. The panel's live ranking (read only too: a POST stores it) is computed by
:func:`webapp.curation.services.suggestions.panel_ranking` and handed to :func:`panel`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from django.db.models import Count, Exists, F, FloatField, OuterRef, Q, QuerySet, Subquery, Value, Window
from django.db.models.functions import Abs, Coalesce, Greatest, Least, RowNumber, Upper

from webapp.artifacts.manifests import is_available
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.curation.lineage import MAX_SIBLINGS, Family, family
from webapp.curation.models import DECIDED_STATUSES, OPEN_STATUSES, Decision
from webapp.curation.panel import CandidateRow, Panel, panel, search_version, search_within
from webapp.linking.versions import active_index

__all__ = [
    "MAX_SIBLINGS", "CandidateRow", "CollectionStats", "CuratorActivity", "Family", "Panel", "collection_stats",
    "curator_activity", "documents_with_review_counts", "family", "next_in_queue", "panel", "recent_decisions",
    "review_queue", "search_version", "search_within", "type_conflict_count",
]

EVERY_DOCUMENT = Q()  # the default document filter: keeps every document (an admin's view)

# --- dashboard -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CollectionStats:
    collection: Collection
    documents: int
    mentions: int
    reviewed: int  # decided by a curator: accepted, relinked, NIL or rejected
    queue: int  # open: pending or suggested
    by_status: dict[str, int] = field(default_factory=dict)

    @property
    def share_reviewed(self) -> float:
        return self.reviewed / self.mentions if self.mentions else 0.0

    @property
    def percent_reviewed(self) -> int:
        return int(self.share_reviewed * 100)

    def status_rows(self) -> list[tuple[str, str, int]]:
        return [(value, label, self.by_status.get(value, 0)) for value, label in Mention.Status.choices]


def _in(visible: Q, prefix: str = "document__") -> Q:
    """``visible`` (a filter on documents: :func:`webapp.projects.access.visible_documents_q`) for rows reached from
    a document through ``prefix``; nothing to filter when it keeps everything (an admin)."""
    return Q(**{f"{prefix}in": Document.objects.filter(visible)}) if visible else Q()


def collection_stats(collections: QuerySet[Collection], visible: Q = EVERY_DOCUMENT) -> list[CollectionStats]:
    """Counts over the documents ``visible`` keeps (those of a project the reader is not in are not counted)."""
    mentions = Mention.objects.filter(document__collection__in=collections).filter(_in(visible))
    by_status: dict[int, Counter[str]] = {}
    for cid, status, n in mentions.values_list("document__collection_id", "status").annotate(n=Count("id")).order_by():
        by_status.setdefault(cid, Counter())[status] = n
    documents = dict(
        Document.objects.filter(collection__in=collections).filter(visible).values_list("collection_id").annotate(n=Count("id")).order_by()
    )
    out = []
    for collection in collections.select_related("dictionary"):
        counts = by_status.get(collection.pk, Counter())
        out.append(
            CollectionStats(
                collection,
                documents.get(collection.pk, 0),
                sum(counts.values()),
                sum(counts[s] for s in DECIDED_STATUSES),
                sum(counts[s] for s in OPEN_STATUSES),
                dict(counts),
            )
        )
    return out


def documents_with_review_counts(collection: Collection, visible: Q = EVERY_DOCUMENT) -> QuerySet[Document]:
    """The collection's documents (those ``visible`` keeps) with ``n_mentions`` and ``n_reviewed`` (decided by a
    curator, not just suggested)."""
    reviewed = Q(mentions__status__in=DECIDED_STATUSES)
    return (
        Document.objects.filter(collection=collection).filter(visible)
        .order_by("id")
        .only("id", "external_id", "title", "collection_id")
        .annotate(n_mentions=Count("mentions"), n_reviewed=Count("mentions", filter=reviewed))
    )


@dataclass(frozen=True)
class CuratorActivity:
    username: str
    decisions: int
    median_seconds: float | None
    accepted_top1: int


def curator_activity(collection: Collection, visible: Q = EVERY_DOCUMENT) -> list[CuratorActivity]:
    rows = Decision.objects.filter(document__collection=collection, undone_at__isnull=True).filter(_in(visible)).values_list(
        "user__username", "time_on_task_ms", "action", "rank"
    )
    grouped: dict[str, list[tuple[int | None, str, int | None]]] = {}
    for username, ms, action, rank in rows:
        grouped.setdefault(username, []).append((ms, action, rank))
    out = []
    for username, items in sorted(grouped.items(), key=lambda kv: -len(kv[1])):
        times = [ms for ms, _, _ in items if ms is not None]
        out.append(
            CuratorActivity(
                username,
                len(items),
                median(times) / 1000 if times else None,
                sum(1 for _, action, rank in items if action == Decision.Action.ACCEPT and rank == 1),
            )
        )
    return out


def recent_decisions(collection: Collection, limit: int = 12, visible: Q = EVERY_DOCUMENT) -> QuerySet[Decision]:
    return (
        Decision.objects.filter(document__collection=collection).filter(_in(visible))
        .select_related("user", "concept")  # the dashboard links the document by its id: its text is not read
        .order_by("-created_at", "-id")[:limit]
    )


# --- review queue ----------------------------------------------------------------------------------------


def _suggested_with_conflict() -> Exists:
    """The mention's suggested link (rank 1 of any part) has a type conflict."""
    return Exists(Link.objects.filter(mention=OuterRef("pk"), origin=Link.Origin.MODEL, rank=1, type_conflict=True))


def review_queue(collection: Collection, type_conflicts: bool = False, visible: Q = EVERY_DOCUMENT) -> QuerySet[Mention]:
    """Open mentions, the decision that fixes most first; ``type_conflicts``: only those whose suggested link has a
    type conflict.

    A decision makes its mention a curator synonym, so the linker gets every open mention of the same text (compared
    case-insensitively) right at once. Each text therefore comes once, ranked by how many mentions deciding it is
    likely to fix: its open mentions times the uncertainty of its most uncertain one (1 minus the margin between the
    top two suggestions relative to the top score, so scores of sparse and hybrid models compare; then a low top
    score); its repeats follow after every other text, for a look. Mentions with no suggestion yet come last (the
    panel links them live when opened). Measured on BC5CDR dev (bench/learning_loop.py): the plain uncertainty order
    spent its first 100 decisions on 40 texts and gained 0.6 Acc@1 points, a random order 3.1.
    Only the documents ``visible`` keeps are queued. Each mention carries ``type_conflict`` (its suggestion's flag, stored by a LATTE re-ranker), ``repeat`` (how many
    open mentions of its text come before it), ``twins`` (the open mentions of its text) and ``impact``.
    """
    suggestions = Link.objects.filter(mention=OuterRef("pk"), origin=Link.Origin.MODEL, part=0)
    top1 = Subquery(suggestions.filter(rank=1).values("score")[:1], output_field=FloatField())
    top2 = Subquery(suggestions.filter(rank=2).values("score")[:1], output_field=FloatField())
    queue = (Mention.objects.filter(document__collection=collection, status__in=OPEN_STATUSES).filter(_in(visible))
             .annotate(type_conflict=_suggested_with_conflict()))
    if type_conflicts:
        queue = queue.filter(type_conflict=True)
    by_text = [Upper("text")]
    return (
        queue.annotate(top1=top1, top2=top2)
        .annotate(
            margin=(F("top1") - Coalesce(F("top2"), Value(0.0))) / Greatest(Abs(F("top1")), Value(1e-6)),
        )
        .annotate(
            repeat=Window(RowNumber(), partition_by=by_text,
                          order_by=[F("margin").asc(nulls_last=True), F("top1").asc(nulls_last=True), "pk"]) - 1,
            twins=Window(Count("pk"), partition_by=by_text),
        )
        .annotate(impact=F("twins") * (Value(1.0) - Least(Greatest(F("margin"), Value(0.0)), Value(1.0))))
        .select_related("document")
        .defer("document__text", "document__metadata")  # a queue row shows its document's id, never its text
        .order_by(Least(F("repeat"), Value(1)).asc(),  # every text's first mention, then the repeats
                  F("impact").desc(nulls_last=True), F("margin").asc(nulls_last=True), F("top1").asc(nulls_last=True),
                  "document_id", "start", "pk")
    )


def type_conflict_count(collection: Collection, visible: Q = EVERY_DOCUMENT) -> int:
    """Open mentions whose suggested link has a type conflict."""
    open_mentions = Mention.objects.filter(document__collection=collection, status__in=OPEN_STATUSES).filter(_in(visible))
    return open_mentions.filter(_suggested_with_conflict()).count()


def next_in_queue(collection: Collection, exclude: int | None = None, type_conflicts: bool = False,
                  visible: Q = EVERY_DOCUMENT) -> Mention | None:
    queue = review_queue(collection, type_conflicts, visible)
    if exclude is not None:
        queue = queue.exclude(pk=exclude)
    return queue.first()


@dataclass(frozen=True)
class AutoAcceptState:
    """The dashboard's auto-accept card: the setting, what it did, and what the serving model's calibration says."""

    threshold: float | None
    accepted: int
    calibrated: bool  # the active model has a calibration (else no suggestion carries a confidence)
    model: str  # the active index's label ("" without one)
    calibrated_on: str  # the collection the calibration was fitted on
    grid: list[dict[str, float]]  # [{threshold, accepted, precision}] on the calibration's examples


def auto_accept_state(collection: Collection) -> AutoAcceptState:
    from webapp.curation.services.auto_accept import auto_accepted

    index = active_index(collection.dictionary_id) if collection.dictionary_id else None
    calibration: dict[str, Any] = {}
    calibrated = False
    if index is not None:
        # Here, or in the artifact store (trained on another host): webapp.artifacts.
        calibrated = is_available(index.artifact_path, "calibration.json") if index.artifact_path else False
        calibration = (index.encoder.config or {}).get("calibration") or {} if index.encoder is not None else {}
    return AutoAcceptState(
        threshold=collection.auto_accept_threshold, accepted=auto_accepted(collection.pk), calibrated=calibrated,
        model=index.label if index is not None else "", calibrated_on=str(calibration.get("collection", "")),
        grid=list(calibration.get("auto_accept") or []),
    )
