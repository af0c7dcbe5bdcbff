"""Whether a ranking made earlier still holds after names came or went (curator synonyms added or taken back).

A caller that keeps rankings (the web app's candidate panel) must never show one the current index would not give.
Comparing the linker's generation is safe but coarse: one curator synonym anywhere sets aside every ranking kept,
and on a curator's path through a document each decision adds one. This module answers the finer question exactly.

Retrieval (:mod:`linker.retrieval`) scores only a *pool* per query: the dense search's top ``names_per_source`` name
rows and the tf-idf search's, each list cut at its lowest admitted score. Everything a ranking shows is a function
of that pool and of the pool rows' data: their scores and prior, their support (the re-ranker's ``name_support``,
the first tie-break), their concepts' support (the second tie-break, read only between rows whose ranking keys are
equal) and the concepts sharing their names (homonyms). So a ranking still holds after a change when

- every candidate's best name stays in a top list: the names added that join a list (they score above its last)
  push out only names that are none of the candidates' best,
- no name added that joins the pool beats its concept's best pooled name, or the last candidate if its concept is
  not a candidate (it would move or enter the ranking),
- no name taken back is a pool row, and none whose support rose is one where support counts (tied on its key with
  another pool row, or read as a feature by a re-ranker that reorders the candidates),
- no concept whose support rose is *tied* in the pool (one of its rows has the ranking key of another concept's row),
- no name added or taken back is spelt (normalised) as a pool name (homonyms), and
- the concept prior did not change.

Each search's top list is exact (a flat dense index, the full tf-idf matrix), so which names join or leave it
follows from the scores: a name within :data:`SCORE_SLACK` of a list's cut counts as possibly on either side. An
approximate index (HNSW, IVF) or a first-stage cascade gives no probe: its callers fall back to comparing
generations. The test of all this is a random sequence of changes checked against fresh links after each
(tests/unit/test_ranking_freshness.py).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["ChangeLog", "IndexChange", "PoolProbe", "RankingProbe", "SCORE_SLACK", "TopList", "ties", "touches_pool"]

# Scores are float32 products computed in different ways (a BLAS block search, one vector against a few rows): a new
# name within this of a floor counts as joining the pool.
SCORE_SLACK = 1e-4


@dataclass(frozen=True)
class TopList:
    """One search's top list for a query (dense or tf-idf), best first, as it admitted name rows to the pool."""

    rows: np.ndarray  # int32
    scores: np.ndarray  # float32
    wanted: int  # the names it asked for: a list this long is full, and a new name must beat its last to join

    @classmethod
    def of(cls, scores: np.ndarray, rows: np.ndarray, wanted: int) -> TopList:
        listed = rows >= 0
        return cls(rows[listed].astype(np.int32), scores[listed].astype(np.float32), wanted)

    @property
    def floor(self) -> float:
        """The score a new name must reach to join (-inf: the list has room)."""
        return float(self.scores[-1]) if len(self.rows) >= self.wanted else float("-inf")

    def after(self, rows: np.ndarray, scores: np.ndarray) -> tuple[set[int], set[int]]:
        """The list's rows once names ``rows`` scoring ``scores`` are in the index: (the rows surely in it, the rows
        that may be). Names within :data:`SCORE_SLACK` of the cut may fall either side of it (a tie, float rounding)."""
        merged_rows = np.concatenate([self.rows.astype(np.int64), rows.astype(np.int64)])
        merged = np.concatenate([self.scores, scores.astype(np.float32)])
        if len(merged) <= self.wanted:
            return set(merged_rows.tolist()), set()
        cut = float(np.sort(merged)[::-1][self.wanted - 1])
        if int((merged > cut - SCORE_SLACK).sum()) <= self.wanted:
            return set(merged_rows[merged > cut - SCORE_SLACK].tolist()), set()
        surely = merged >= cut + SCORE_SLACK
        maybe = ~surely & (merged > cut - SCORE_SLACK)
        return set(merged_rows[surely].tolist()), set(merged_rows[maybe].tolist())


@dataclass(frozen=True)
class PoolProbe:
    """What one query's ranking was drawn from."""

    query: str  # normalised, as retrieval searched it
    vector: np.ndarray | None  # the query's dense vector; None: no dense search
    dense: TopList | None  # None: no dense search
    sparse: TopList | None  # None: no tf-idf search
    rows: np.ndarray  # the pool's name rows (int32: 512 bytes for a pool of 128)
    tied_rows: frozenset[int]  # rows whose ranking key another pool row shares
    tied_concepts: frozenset[str]  # concepts with a row whose ranking key another concept's row shares
    top_rows: np.ndarray  # each candidate's best row, in the ranking's order (int32)
    top_keys: np.ndarray  # their ranking keys (float32)
    k: int  # the candidates asked for

    def keeps_ranking(self, added: np.ndarray, dense: np.ndarray, sparse: np.ndarray, keys: np.ndarray,
                      concept_of: Sequence[str]) -> bool:
        """Whether names ``added`` (rows, scored against the query as a search would: ``dense``, ``sparse``,
        ranking ``keys``) leave the candidates as they were: the names they push out of a top list are none of
        the candidates' best rows, and none that joins the pool beats its concept's best row or the last
        candidate."""
        # A name added while the ranking was being made may be in its lists already: it was scored then.
        listed_then = {r for listed in (self.dense, self.sparse) if listed is not None for r in listed.rows.tolist()}
        fresh = np.array([r not in listed_then for r in added.tolist()], dtype=bool)
        added, dense, sparse, keys = added[fresh], dense[fresh], sparse[fresh], keys[fresh]
        surely: set[int] = set()
        maybe: set[int] = set()
        for listed, scores in ((self.dense, dense), (self.sparse, sparse)):
            if listed is not None:
                certain, possible = listed.after(added, scores)
                surely |= certain
                maybe |= possible
        top = self.top_rows.tolist()
        if any(r not in surely for r in top):
            return False  # a candidate's best name may leave the pool
        best = {concept_of[r]: float(key) for r, key in zip(top, self.top_keys.tolist(), strict=True)}
        last = float(self.top_keys[-1]) if len(top) >= self.k else float("-inf")
        for r, key in zip(added.tolist(), keys.tolist(), strict=True):
            if r not in surely and r not in maybe:
                continue
            cid = concept_of[r]
            if key >= best.get(cid, last) - SCORE_SLACK:
                return False
        return True


@dataclass(frozen=True)
class RankingProbe:
    """A mention's pools (one per composite part) and the linker generation they were read at."""

    generation: int
    parts: tuple[PoolProbe, ...]


@dataclass(frozen=True)
class IndexChange:
    """One change to a linker's names, filed under the generation it brought the linker to."""

    generation: int
    added_rows: tuple[int, ...] = ()
    removed_rows: tuple[int, ...] = ()
    supported_rows: tuple[int, ...] = ()  # rows held already whose support rose (a pair added again)
    supported_concepts: frozenset[str] = frozenset()  # concepts whose support rose (every pair added)
    names: frozenset[str] = frozenset()  # normalised forms of the rows added or taken back (homonyms change)
    everything: bool = False  # a change every ranking may feel (a new concept prior)


class ChangeLog:
    """The latest changes, oldest first; a ranking older than the oldest kept cannot be vouched for."""

    def __init__(self, size: int = 1024) -> None:
        self._changes: deque[IndexChange] = deque(maxlen=size)
        self._lock = threading.Lock()  # the panel's background thread reads while a request's decision records

    def record(self, change: IndexChange) -> None:
        with self._lock:
            self._changes.append(change)

    def since(self, generation: int, now: int) -> list[IndexChange] | None:
        """The changes after ``generation`` up to ``now``; None when the log no longer reaches back that far."""
        with self._lock:
            kept = list(self._changes)
        changes = [c for c in kept if generation < c.generation <= now]
        if len(changes) != now - generation:
            return None
        return changes


def touches_pool(pool: PoolProbe, pool_names: Sequence[str], changes: Sequence[IndexChange], reads_support: bool) -> bool:
    """Whether a change reached a pool other than by a new name joining it (which needs the scores): a pool row
    taken back, a pool row supported more where support counts (it is tied, or ``reads_support``: a re-ranker
    that reorders reads it as a feature), a tied concept supported more, a name spelt as a pool name added or taken
    back."""
    rows = set(pool.rows.tolist())
    if any(r in rows for c in changes for r in c.removed_rows):
        return True
    counted = rows if reads_support else pool.tied_rows
    if any(r in counted for c in changes for r in c.supported_rows):
        return True
    if pool.tied_concepts and any(cid in pool.tied_concepts for c in changes for cid in c.supported_concepts):
        return True
    names = frozenset().union(*(c.names for c in changes))
    return any(name in names for name in pool_names)


def ties(keys: np.ndarray, rows: Sequence[int], concept_ids: Sequence[str]) -> tuple[frozenset[int], frozenset[str]]:
    """The rows whose ranking key (score and prior) another row has too (only between them does a row's support
    decide the order), and the concepts of those tied with another concept's row (only between them does concept
    support)."""
    tied_rows: set[int] = set()
    tied: set[str] = set()
    by_key: dict[float, list[tuple[int, str]]] = {}
    for key, row, cid in zip(keys.tolist(), rows, concept_ids, strict=True):
        by_key.setdefault(key, []).append((row, cid))
    for owners in by_key.values():
        if len(owners) > 1:
            tied_rows.update(r for r, _ in owners)
            concepts = {cid for _, cid in owners}
            if len(concepts) > 1:
                tied |= concepts
    return frozenset(tied_rows), frozenset(tied)
