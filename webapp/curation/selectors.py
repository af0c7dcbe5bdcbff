"""Read side of the curation pages: dashboard figures, the review queue, and the candidate panel's data.

Nothing here writes. The panel's live ranking (which may store new suggestions) is computed by
:func:`webapp.curation.services.suggestions.panel_ranking` and handed to :func:`panel`.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from statistics import median

from django.db import connection
from django.db.models import Count, F, FloatField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Abs, Coalesce, Greatest

from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.curation.models import DECIDED_STATUSES, OPEN_STATUSES, Decision
from webapp.curation.services.suggestions import PanelRanking
from webapp.training.models import IndexVersion
from webapp.vocab.hierarchy import paths_to_roots
from webapp.vocab.models import Concept, DictionaryVersion, HierarchyEdge, KnownType

MAX_SIBLINGS = 15

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


def collection_stats(collections: QuerySet[Collection]) -> list[CollectionStats]:
    mentions = Mention.objects.filter(document__collection__in=collections)
    by_status: dict[int, Counter[str]] = {}
    for cid, status, n in mentions.values_list("document__collection_id", "status").annotate(n=Count("id")).order_by():
        by_status.setdefault(cid, Counter())[status] = n
    documents = dict(
        Document.objects.filter(collection__in=collections).values_list("collection_id").annotate(n=Count("id")).order_by()
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


def documents_with_review_counts(collection: Collection) -> QuerySet[Document]:
    """The collection's documents with ``n_mentions`` and ``n_reviewed`` (decided by a curator, not just suggested)."""
    reviewed = Q(mentions__status__in=DECIDED_STATUSES)
    return (
        Document.objects.filter(collection=collection)
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


def curator_activity(collection: Collection) -> list[CuratorActivity]:
    rows = Decision.objects.filter(document__collection=collection, undone_at__isnull=True).values_list(
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


def recent_decisions(collection: Collection, limit: int = 12) -> QuerySet[Decision]:
    return (
        Decision.objects.filter(document__collection=collection)
        .select_related("user", "concept", "document")
        .order_by("-created_at", "-id")[:limit]
    )


# --- review queue ----------------------------------------------------------------------------------------


def review_queue(collection: Collection) -> QuerySet[Mention]:
    """Open mentions, most uncertain first.

    Uncertainty is the margin between the top two suggestions relative to the top score (so scores of
    sparse and hybrid models compare), then a low top score; mentions with no suggestion yet come last
    (the panel links them live when opened).
    """
    suggestions = Link.objects.filter(mention=OuterRef("pk"), origin=Link.Origin.MODEL, part=0)
    top1 = Subquery(suggestions.filter(rank=1).values("score")[:1], output_field=FloatField())
    top2 = Subquery(suggestions.filter(rank=2).values("score")[:1], output_field=FloatField())
    return (
        Mention.objects.filter(document__collection=collection, status__in=OPEN_STATUSES)
        .annotate(top1=top1, top2=top2)
        .annotate(
            margin=(F("top1") - Coalesce(F("top2"), Value(0.0))) / Greatest(Abs(F("top1")), Value(1e-6)),
        )
        .select_related("document")
        .order_by(F("margin").asc(nulls_last=True), F("top1").asc(nulls_last=True), "document_id", "start", "pk")
    )


def next_in_queue(collection: Collection, exclude: int | None = None) -> Mention | None:
    queue = review_queue(collection)
    if exclude is not None:
        queue = queue.exclude(pk=exclude)
    return queue.first()


# --- the candidate panel -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CandidateRow:
    number: int  # 1-based across parts: the key that picks it
    part: int
    part_text: str
    rank: int  # within its part
    concept_id: str
    concept: Concept | None  # None: an id the dictionary version lacks
    matched: str  # the name that matched ("" where unknown)
    score: float
    bar: int  # 0..100, relative to the part's top score
    dense: float | None
    sparse: float | None
    known_types: list[KnownType]
    path: list[Concept]  # root first, the concept last; empty for a root
    more_paths: int
    parent: Concept | None
    is_current: bool  # the mention's current curator link
    is_gold: bool

    @property
    def preferred_name(self) -> str:
        return self.concept.preferred_name if self.concept else self.concept_id

    @property
    def matched_is_preferred(self) -> bool:
        return not self.matched or self.matched == self.preferred_name


@dataclass(frozen=True)
class Panel:
    mention: Mention
    parts: list[str]  # one entry per part (the mention text for a simple mention)
    candidates: list[CandidateRow]
    model_version: str
    live: bool  # candidates come from the active linker (False: stored suggestions only)
    version: DictionaryVersion | None  # the dictionary version concepts are searched in
    current: Link | None  # latest curator link
    gold: list[Link]
    latest: Decision | None
    note: str = ""
    stored: bool = False  # the panel stored new suggestions (the mention may have become "suggested")

    @property
    def is_composite(self) -> bool:
        return len(self.parts) > 1


def search_version(collection: Collection) -> DictionaryVersion | None:
    """The dictionary version concept search looks in: the one the active index serves, else the latest."""
    dictionary = collection.dictionary
    if dictionary is None:
        return None
    active = IndexVersion.objects.filter(dictionary=dictionary, state=IndexVersion.State.ACTIVE).select_related("dictionary_version").first()
    return active.dictionary_version if active is not None else dictionary.latest_version()


def _safe(value: float) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def panel(mention: Mention, ranking: PanelRanking | None) -> Panel:
    """Everything the candidate panel shows for one mention (the mention comes with document__collection__dictionary).

    ``ranking`` is the active linker's live ranking, already stored as the mention's suggestions where it is
    open, so the rank recorded with a decision is the rank shown; None without an active index: the stored
    suggestions are shown. Every query here is a handful of rows by index.
    """
    dictionary = mention.document.collection.dictionary
    parts = list(mention.part_texts) or [mention.text]
    links = list(mention.links.select_related("concept__version__dictionary", "created_by").order_by("part", "rank", "-created_at", "-id"))
    note = ""
    candidates: list[tuple[int, int, str, str, float, float | None, float | None]] = []
    version: DictionaryVersion | None
    if ranking is not None:
        version = ranking.active.dictionary_version
        by_cid = _concepts(version, {c.concept_id for c in ranking.candidates})
        seen_rank: dict[int, int] = {}
        for c in ranking.candidates:
            seen_rank[c.part] = seen_rank.get(c.part, 0) + 1
            candidates.append((c.part, seen_rank[c.part], c.concept_id, c.name, float(c.score), _safe(c.dense), _safe(c.sparse)))
        model_version, live = ranking.active.label, True
        if ranking.part_queries is not None:
            # The linker split a composite mention the source did not: name the parts as it queried them.
            parts = ranking.part_queries
    else:
        model_links = [link for link in links if link.origin == Link.Origin.MODEL]
        version = dictionary.latest_version() if dictionary is not None else None
        candidates = [(s.part, s.rank or i + 1, s.concept_ref, "", s.score or 0.0, None, None) for i, s in enumerate(model_links)]
        by_cid = {s.concept_ref: s.concept for s in model_links if s.concept is not None}
        model_version, live = (model_links[0].model_version if model_links else ""), False
        note = (
            "No active index for this dictionary: showing stored suggestions." if model_links
            else "No active index for this dictionary and no stored suggestions: search for a concept (/)."
        )
    concept_pks_ = [c.pk for c in by_cid.values()]
    types = _known_types(concept_pks_)
    paths = _first_paths(concept_pks_)
    curated = sorted((link for link in links if link.origin == Link.Origin.CURATOR), key=lambda link: (link.created_at, link.pk))
    current = curated[-1] if curated else None
    gold = [link for link in links if link.origin == Link.Origin.GOLD]
    gold_pks = {g.concept_id for g in gold if g.concept_id}
    top_by_part: dict[int, float] = {}
    for part, rank, _, _, score, _, _ in candidates:
        if rank == 1:
            top_by_part[part] = score
    rows = []
    for number, (part, rank, cid, matched, score, dense, sparse) in enumerate(candidates, start=1):
        concept = by_cid.get(cid)
        pk = concept.pk if concept is not None else None
        top = top_by_part.get(part) or 0.0
        ancestors, more = paths.get(pk, ([], 0)) if pk else ([], 0)
        rows.append(
            CandidateRow(
                number=number, part=part, part_text=parts[part] if part < len(parts) else mention.text, rank=rank,
                concept_id=cid, concept=concept, matched=matched, score=score,
                bar=max(2, min(100, round(100 * score / top))) if top > 0 else 0,
                dense=dense, sparse=sparse, known_types=types.get(pk, []) if pk else [],
                path=[*ancestors, concept] if ancestors and concept is not None else [], more_paths=more,
                parent=ancestors[-1] if ancestors else None,
                is_current=current is not None and current.concept_id is not None and current.concept_id == pk,
                is_gold=pk in gold_pks if pk else False,
            )
        )
    latest = Decision.objects.filter(mention=mention).select_related("user", "concept").order_by("-created_at", "-id").first()
    stored = ranking.stored if ranking is not None else False
    return Panel(mention, parts, rows, model_version, live, version, current, gold, latest, note, stored)


def _concepts(version: DictionaryVersion, concept_ids: set[str]) -> dict[str, Concept]:
    if not concept_ids:
        return {}
    rows = Concept.objects.filter(version=version, concept_id__in=concept_ids).select_related("version__dictionary")
    return {c.concept_id: c for c in rows}


def _known_types(concept_pks_: list[int]) -> dict[int, list[KnownType]]:
    out: dict[int, list[KnownType]] = {}
    through = Concept.known_types.through.objects.filter(concept_id__in=concept_pks_).select_related("knowntype__vocabulary")
    for row in through.order_by("knowntype__label"):
        out.setdefault(row.concept_id, []).append(row.knowntype)
    return out


_ANCESTORS_OF_MANY_SQL = """
WITH RECURSIVE up(child_id, parent_id) AS (
    SELECT child_id, parent_id FROM {edge} WHERE child_id = ANY(%s)
    UNION
    SELECT e.child_id, e.parent_id FROM {edge} e JOIN up ON e.child_id = up.parent_id
)
SELECT up.child_id, up.parent_id, c.version_id, c.concept_id, c.preferred_name
FROM up JOIN {concept} c ON c.id = up.parent_id
ORDER BY up.child_id, up.parent_id
"""


def _first_paths(pks: list[int], limit: int = 8) -> dict[int, tuple[list[Concept], int]]:
    """Per concept: its shortest path from a root (root first) and how many other paths exist (up to ``limit``).

    One recursive query for all candidates' ancestors, their names included, whatever the number of candidates.
    Path nodes are unsaved-looking Concept instances with id, concept id and preferred name only.
    """
    if not pks:
        return {}
    parents: dict[int, list[int]] = {}
    nodes: dict[int, Concept] = {}
    with connection.cursor() as cursor:
        cursor.execute(_ANCESTORS_OF_MANY_SQL.format(edge=HierarchyEdge._meta.db_table, concept=Concept._meta.db_table), [pks])
        for child, parent, version_id, cid, name in cursor.fetchall():
            parents.setdefault(child, []).append(parent)
            nodes[parent] = Concept(pk=parent, version_id=version_id, concept_id=cid, preferred_name=name)
    out: dict[int, tuple[list[Concept], int]] = {}
    for pk in pks:
        pk_paths, _ = paths_to_roots(pk, parents, limit)
        pk_paths.sort(key=len)
        if not pk_paths or len(pk_paths[0]) < 2:
            out[pk] = ([], 0)
            continue
        out[pk] = ([nodes[p] for p in pk_paths[0][:-1]], len(pk_paths) - 1)
    return out


@dataclass(frozen=True)
class Family:
    concept: Concept
    parents: list[tuple[Concept, list[Concept], bool]]  # parent, its other children (siblings), more siblings exist
    children: list[Concept]
    more_children: bool


def family(concept: Concept) -> Family:
    """Parents of a concept with their other children (the concept's siblings), and its own children."""
    parent_ids = list(HierarchyEdge.objects.filter(child=concept).values_list("parent_id", flat=True))
    concepts = Concept.objects.select_related("version__dictionary")
    parents = concepts.in_bulk(parent_ids)
    out = []
    for pid in parent_ids:
        siblings = list(
            concepts.filter(parent_edges__parent_id=pid).exclude(pk=concept.pk).order_by("preferred_name").distinct()[: MAX_SIBLINGS + 1]
        )
        out.append((parents[pid], siblings[:MAX_SIBLINGS], len(siblings) > MAX_SIBLINGS))
    out.sort(key=lambda p: p[0].preferred_name.lower())
    children = list(concepts.filter(parent_edges__parent=concept).order_by("preferred_name").distinct()[: MAX_SIBLINGS + 1])
    return Family(concept, out, children[:MAX_SIBLINGS], len(children) > MAX_SIBLINGS)
