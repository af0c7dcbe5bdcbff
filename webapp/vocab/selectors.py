"""Read-side queries of the vocabulary pages: dictionary summaries and concept search.

Concept search is the one search of the project: the typeahead of the dictionary page, the curator's "search"
decision, and ``GET /api/concepts/?q=``. It must stay fast on dictionaries of 100K+ names: every filter is
one an index on ``Name.normalized`` serves (a b-tree range for prefixes, the trigram GIN index for ``LIKE '% q%'`` and the word-similarity operator
``%>``), and every query stops after a few rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence, Set
from dataclasses import dataclass
from typing import Any, TypeVar

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.search import TrigramWordSimilarity
from django.db.models import (
    Case,
    CharField,
    Count,
    F,
    IntegerField,
    Lookup,
    Prefetch,
    Q,
    QuerySet,
    Value,
    When,
)
from django.db.models.functions import Left, Length

from linker.text import normalize
from webapp.vocab.models import PREFIX_KEY, Concept, Dictionary, DictionaryVersion, HierarchyEdge, Name

M = TypeVar("M", Concept, Name)

MIN_QUERY_LENGTH = 2
SEARCH_LIMIT = 20


@dataclass(frozen=True)
class VersionCounts:
    concepts: int
    names: int
    edges: int


@dataclass(frozen=True)
class VersionSummary:
    version: DictionaryVersion
    counts: VersionCounts


@dataclass(frozen=True)
class DictionarySummary:
    dictionary: Dictionary
    versions: list[VersionSummary]  # newest first

    @property
    def latest(self) -> VersionSummary | None:
        return self.versions[0] if self.versions else None


@dataclass(frozen=True)
class ConceptHit:
    concept: Concept
    matched: str  # the name (or id) that matched the query
    by_id: bool = False

    @property
    def matched_preferred(self) -> bool:
        return self.matched == self.concept.preferred_name


def version_counts(version: DictionaryVersion) -> VersionCounts:
    """The counts stored at import; counted afresh for a version imported without them."""
    if version.concept_count or version.name_count or version.edge_count:
        return VersionCounts(version.concept_count, version.name_count, version.edge_count)
    return VersionCounts(
        concepts=Concept.objects.filter(version=version).count(),
        names=Name.objects.filter(concept__version=version).count(),
        edges=HierarchyEdge.objects.filter(version=version).count(),
    )


def dictionary_summaries() -> list[DictionarySummary]:
    newest_first = DictionaryVersion.objects.order_by("-imported_at")
    dictionaries = Dictionary.objects.order_by("slug").prefetch_related(Prefetch("versions", queryset=newest_first))
    return [
        DictionarySummary(d, [VersionSummary(v, version_counts(v)) for v in d.versions.all()]) for d in dictionaries
    ]


def name_counts(concept_pks: list[int]) -> dict[int, int]:
    rows = Name.objects.filter(concept_id__in=concept_pks).values("concept_id").annotate(n=Count("id"))
    return {row["concept_id"]: row["n"] for row in rows}


def search_concepts(
    version: DictionaryVersion | Sequence[DictionaryVersion], query: str, limit: int = SEARCH_LIMIT,
    within: Set[str] | None = None,
) -> list[ConceptHit]:
    """Concepts of ``version`` (or of several versions) for a typed query, each once with its best-matching name.

    Tiers, each a query of its own that stops at a few times ``limit`` rows, run until ``limit`` concepts
    are found: the id or an alternative id; names starting with the query (exact first, then shorter, then
    preferred); names with a later word starting with it; and, for misspellings, names whose words are
    trigram-similar to it (``word_similarity``). Cheap tiers first keeps common words ("disease", which
    half of MEDIC's names contain) from paying for a similarity ranking of thousands of rows.

    ``within``: only concepts of these ids (a project's concept filter, :mod:`webapp.projects.concept_filter`),
    applied in each tier's query, so a narrow filter still fills ``limit``; None: every concept.
    """
    versions = [version] if isinstance(version, DictionaryVersion) else list(version)
    hits: dict[int, ConceptHit] = {}
    raw = query.strip()
    if raw and versions:
        of_versions = _within(Concept.objects.filter(version__in=versions), "concept_id", within).select_related("version__dictionary")
        # Two lookups, each on its own index (the id's b-tree, the alternative ids' GIN): one query with
        # "concept_id = q OR alt_ids @> {q}" can use neither and read every concept (350 ms at 840K concepts).
        for by_id in (of_versions.filter(concept_id=raw), of_versions.filter(alt_ids__contains=[raw])):
            for concept in by_id[:limit]:
                hits.setdefault(concept.pk, ConceptHit(concept, concept.concept_id, by_id=True))
    q = normalize(raw)
    if len(q) < MIN_QUERY_LENGTH or not versions:
        return list(hits.values())
    for names in _name_tiers(versions, q, limit * 4, within):
        for name in names:
            hits.setdefault(name.concept_id, ConceptHit(name.concept, name.text))
            if len(hits) >= limit:
                return list(hits.values())
    return list(hits.values())


def _within(rows: QuerySet[M], field: str, concept_ids: Set[str] | None) -> QuerySet[M]:
    """``rows`` whose concept id is one of ``concept_ids`` (None: all): one array parameter, however many ids."""
    if concept_ids is None:
        return rows
    return rows.filter(_AnyOf(F(field), Value(sorted(concept_ids), output_field=ArrayField(CharField()))))


class _AnyOf(Lookup):  # type: ignore[type-arg]
    """``lhs = ANY(array)``: membership in one array parameter (``__in`` sends one parameter per value)."""

    lookup_name = "any_of"

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        return f"{lhs} = ANY({rhs})", [*lhs_params, *rhs_params]


def _name_tiers(versions: list[DictionaryVersion], q: str, rows: int, within: Set[str] | None = None) -> Iterator[list[Name]]:
    names = Name.objects.filter(concept__version__in=versions).select_related("concept__version__dictionary")
    names = _within(names, "concept__concept_id", within)
    shortest = (Length("normalized"), "-is_preferred", "concept__concept_id")
    # A range on the b-tree index finds prefixes under any collation; LIKE keeps the result exact.
    if len(q) >= PREFIX_KEY:
        # The prefix index (name_prefix_length) gives the names starting with q shortest first: the exact name,
        # if any, is the shortest; ties of one length are then put in order here.
        by_length = names.annotate(key=Left("normalized", PREFIX_KEY)).filter(key=q[:PREFIX_KEY], normalized__startswith=q)
        found = list(by_length.order_by(Length("normalized"))[:rows])
        yield sorted(found, key=lambda n: (n.normalized != q, len(n.normalized), not n.is_preferred, n.concept.concept_id))
    else:
        prefix = Q(normalized__gte=q, normalized__lt=q + "\U0010ffff", normalized__startswith=q)
        exact_first = Case(When(normalized=q, then=Value(0)), default=Value(1), output_field=IntegerField())
        yield list(names.filter(prefix).annotate(exact=exact_first).order_by("exact", *shortest)[:rows])
    yield list(names.filter(normalized__contains=f" {q}").order_by(*shortest)[:rows])
    similarity = TrigramWordSimilarity(q, "normalized")
    yield list(names.filter(normalized__trigram_word_similar=q).annotate(similarity=similarity).order_by("-similarity", *shortest)[:rows])
