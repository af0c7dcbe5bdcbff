"""Read-side queries of the vocabulary pages: dictionary summaries and concept search.

Concept search is the one search of the project: the typeahead of the dictionary page, the curator's "search"
decision, and ``GET /api/concepts/?q=``. It must stay fast on dictionaries of millions of names: every filter is
one an index on ``Name.normalized`` serves (a b-tree range for prefixes, the trigram GIN index for ``LIKE '% q%'``
and word-start regular expressions), every query stops after a few rows, and misspellings are corrected against
the dictionary's words (:mod:`webapp.vocab.spelling`) before the names are searched.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence, Set
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.search import TrigramWordSimilarity
from django.db import connection, transaction
from django.db.models import (
    CharField,
    Count,
    F,
    Lookup,
    Prefetch,
    QuerySet,
    Value,
)
from django.db.models.functions import Left, Length

from linker.text import normalize
from webapp.vocab import spelling
from webapp.vocab.models import PREFIX_KEY, Concept, Dictionary, DictionaryVersion, HierarchyEdge, Name

M = TypeVar("M", Concept, Name)

MIN_QUERY_LENGTH = 2
SEARCH_LIMIT = 20
# Names of a prefix read in name order before the prefix counts as common (see _prefix_tier).
PREFIX_SCAN = 400
# Words the every-word tier does not require (a name says "protein excretion" as often as "excretion of proteins").
STOP_WORDS = frozenset({"and", "the", "with", "for", "from", "due", "not", "nos", "other"})
# Longest normalised name the prefix tier looks for (longer ones are still found by the later tiers).
MAX_NAME_LENGTH = 1024


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
    are found: the id or an alternative id; names starting with the query (:func:`_prefix_order`: the exact name
    first, then names the query starts with whole words, preferred names before synonyms, then shorter); names
    with a later word starting with it; the same two for the query with its misspelled words corrected
    (:func:`webapp.vocab.spelling.corrections`); and names holding every word of the (corrected) query, in any
    order. Each tier reads a few rows through an index; none ranks every name that shares trigrams with the
    query (a similarity ranking of the names read 450 ms for a typo of a common word at 3M names).

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
        # Unordered, sorted here: with the model's ORDER BY concept_id and a LIMIT, PostgreSQL may walk the id
        # index in order filtering on alt_ids instead, which reads every concept when none matches (170 ms at
        # 840K concepts, on some imports' statistics and not others).
        for by_id in (of_versions.filter(concept_id=raw), of_versions.filter(alt_ids__contains=[raw])):
            for concept in sorted(by_id.order_by()[:limit], key=lambda c: (c.concept_id, c.pk)):
                hits.setdefault(concept.pk, ConceptHit(concept, concept.concept_id, by_id=True))
    q = normalize(raw)
    if len(q) < MIN_QUERY_LENGTH or not versions:
        return list(hits.values())
    names = _names_of(versions, within)
    for found in _name_tiers(versions, names, q, limit * 4):
        if _take(hits, found, limit):
            return list(hits.values())
    if not hits:
        _take(hits, _similar_tier(names, q, limit * 4), limit)
    return list(hits.values())


def _take(hits: dict[int, ConceptHit], names: list[Name], limit: int) -> bool:
    """Add each new concept of ``names`` to ``hits`` (its first name is the match) until ``limit``: full or not."""
    for name in names:
        hits.setdefault(name.concept_id, ConceptHit(name.concept, name.text))
        if len(hits) >= limit:
            return True
    return False


def first_by_id(concepts: QuerySet[Concept]) -> Concept | None:
    """The concept of ``concepts`` (an alternative-id lookup: a few rows) with the smallest id, read unordered: with
    ORDER BY concept_id and LIMIT 1, PostgreSQL may walk the id index filtering on alt_ids and read every concept of
    the version when none matches (170 ms at 840K concepts) instead of asking the alt_ids GIN index."""
    return min(concepts.order_by(), key=lambda c: (c.concept_id, c.pk), default=None)


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


def _names_of(versions: list[DictionaryVersion], within: Set[str] | None) -> QuerySet[Name]:
    names = Name.objects.filter(concept__version__in=versions).select_related("concept__version__dictionary")
    return _within(names, "concept__concept_id", within)


def _name_tiers(versions: list[DictionaryVersion], names: QuerySet[Name], q: str, rows: int) -> Iterator[list[Name]]:
    yield _prefix_tier(names, q, rows)
    yield _word_start_tier(names, q, rows)
    fixed = spelling.corrections(versions, q)
    for corrected in fixed:
        yield _prefix_tier(names, corrected, rows)
        yield _word_start_tier(names, corrected, rows)
    words = (fixed[0] if fixed else q).split()
    required = [w for w in words if len(w) >= spelling.MIN_WORD and w not in STOP_WORDS]
    # A short number names the member of a series ("complement 7 deficiency" is not complement 5's): it must be
    # there as a word of its own, or the shortest member of the series comes first.
    numbers = [w for w in words if len(w) < spelling.MIN_WORD and w.isdigit()]
    if len(required) > 1 or (required and numbers):  # "excretion of proteins" finds "protein excretion"
        yield _every_word_tier(names, required, rows, numbers)


def _similar_tier(names: QuerySet[Name], q: str, rows: int) -> list[Name]:
    """The names most similar to ``q`` by trigram word similarity: a ranking of every name sharing trigrams with
    it (hundreds of milliseconds at millions of names), so only a search the other tiers left empty pays it."""
    similar = names.filter(normalized__trigram_word_similar=q).annotate(similarity=TrigramWordSimilarity(q, "normalized"))
    return _as_names(names, list(similar.order_by("-similarity", *_SHORTEST).values_list(*_LIGHT)[:rows]))


_SHORTEST = (Length("normalized"), "-is_preferred", "concept__concept_id")


def _word_start_tier(names: QuerySet[Name], q: str, rows: int) -> list[Name]:
    """Names with a later word starting with ``q`` ("…breast cancer…" for "breast can"), shortest first."""
    return _as_names(names, list(names.filter(normalized__contains=f" {q}").order_by(*_SHORTEST).values_list(*_LIGHT)[:rows]))


def _every_word_tier(names: QuerySet[Name], words: Sequence[str], rows: int, whole: Sequence[str] = ()) -> list[Name]:
    """Names holding a word starting with each of ``words`` and each of ``whole`` as a word, in any order and with
    others between ("cleft lip and palate" for "cleft palate", "abnormalities of the cerebral cortex" for
    "cerebral abnormalities", "complement component 7 deficiency" for "complement 7 deficiency")."""
    for word in words:
        stem = word[:-1] if len(word) > 3 and word.endswith("s") else word  # "proteins" finds "protein" too
        names = names.filter(normalized__regex=rf"(^| ){re.escape(stem)}")
    for word in whole:
        names = names.filter(normalized__regex=rf"(^| ){re.escape(word)}( |$)")
    return _as_names(names, list(names.order_by(*_SHORTEST).values_list(*_LIGHT)[:rows]))


# Each tier reads its rows as these tuples and only the names it returns as models (with concept, version and
# dictionary): 400 names as models were 1,600 instances, most of a search's time.
_LIGHT = ("pk", "normalized", "is_preferred", "concept__concept_id")


def _prefix_tier(names: QuerySet[Name], q: str, rows: int) -> list[Name]:
    """Up to ``rows`` names starting with ``q``, in :func:`_prefix_order`.

    Two paths, chosen by how many names start with ``q``, because no single plan is fast for both at 3M names:
    the b-tree range in name order, read up to PREFIX_SCAN rows, holds every match of a rare prefix (sorted
    here); a common prefix ("hyper": 26K names) is read shortest first from the (first 3 characters, length)
    index, a window of lengths at a time, until ``rows`` are found. Both are index scans that stop early, plans
    PostgreSQL does not choose on its own: it multiplies the selectivities of the range (or key) and of LIKE
    (which the trigram index also serves), expects a few dozen rows, then bitmap-scans the trigram index and
    sorts every match (200-500 ms at 3M names).
    """
    in_range = names.filter(normalized__gte=q, normalized__lt=q + "\U0010ffff", normalized__startswith=q)
    with _index_order_only():
        first = list(in_range.order_by("normalized").values_list(*_LIGHT)[:PREFIX_SCAN])
    if len(first) < PREFIX_SCAN:
        return _as_names(names, sorted(first, key=_prefix_order(q))[:rows])
    if len(q) < PREFIX_KEY:
        return _as_names(names, first[:rows])  # a common one- or two-letter prefix: in name order, exact first
    # Shortest first through the (first 3 characters, length) index, a window of lengths at a time (doubling):
    # each query is an index range on both columns, however PostgreSQL misjudges how many rows LIKE keeps.
    keyed = names.annotate(key=Left("normalized", PREFIX_KEY), length=Length("normalized"))
    found: list[tuple[int, str, bool, str]] = []
    low, width = len(q), 4
    with _index_order_only():
        while len(found) < rows and low <= MAX_NAME_LENGTH:
            window = keyed.filter(key=q[:PREFIX_KEY], length__gte=low, length__lt=low + width, normalized__startswith=q)
            found += window.order_by("key", "length").values_list(*_LIGHT)[: rows - len(found)]
            low, width = low + width, width * 2
    return _as_names(names, sorted(found, key=_prefix_order(q)))


def _prefix_order(q: str) -> Callable[[tuple[int, str, bool, str]], tuple[bool, bool, bool, int, str]]:
    """The order of names starting with ``q``: the exact name; then names that ``q`` starts with whole words
    ("flu" is "flu human", not "flushing"); within each, a concept's preferred name before any synonym, then the
    shortest, then the concept id. A synonym's accident must not come first: for "diabetes", Hemochromatosis's
    "diabetes bronze" is shorter than "diabetes mellitus", the concept meant (bench/concept_search.py)."""
    return lambda row: (row[1] != q, not row[1].startswith(q + " ") and row[1] != q, not row[2], len(row[1]), row[3])


def _as_names(names: QuerySet[Name], rows: list[tuple[int, str, bool, str]]) -> list[Name]:
    """The Name models of ``rows`` (light tuples), in the same order, in one query."""
    by_pk = names.in_bulk([row[0] for row in rows])
    return [by_pk[row[0]] for row in rows if row[0] in by_pk]


@contextmanager
def _index_order_only() -> Iterator[None]:
    """Bitmap and sequential scans off for the queries inside: an ordered index scan stopped at its LIMIT is then
    the plan (SET LOCAL in a savepoint, so an error rolls the settings back too; restored on the way out)."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('enable_bitmapscan'), current_setting('enable_seqscan')")
        bitmap, seq = cursor.fetchone()
        cursor.execute("SET LOCAL enable_bitmapscan = off; SET LOCAL enable_seqscan = off")
        yield
        cursor.execute("SELECT set_config('enable_bitmapscan', %s, true), set_config('enable_seqscan', %s, true)",
                       [bitmap, seq])
