"""Whether a ranking made earlier still holds after names came or went (curator synonyms added or taken back).

A caller that keeps rankings (the web app's candidate panel) must never show one the current index would not give.
Comparing the linker's generation is safe but coarse: one curator synonym anywhere sets aside every ranking kept,
and on a curator's path through a document each decision adds one. This module answers the finer question exactly.

Retrieval (:mod:`linker.retrieval`) scores only a *pool* per query: the dense search's top ``names_per_source`` name
rows and the tf-idf search's, each list cut at its lowest admitted score. Everything a ranking shows is a function
of that pool and of the pool rows' data: their scores and prior, their support (the re-ranker's ``name_support``,
the first tie-break), their concepts' support (the second tie-break, read only between rows whose ranking keys are
equal) and the concepts sharing their names (homonyms). So a ranking still holds after a change when

- no name added scores at least a pool's floor against the query (it would have joined the pool),
- no name taken back, and none whose support rose, is a pool row,
- no concept whose support rose is *tied* in the pool (one of its rows has the ranking key of another concept's row),
- no name added or taken back is spelt (normalised) as a pool name (homonyms), and
- the concept prior did not change.

A name outside the pool cannot matter otherwise: each search's top list is exact (a flat dense index, the full
tf-idf matrix), so adding one below its floor or dropping one outside it leaves it as it was. An approximate index
(HNSW, IVF) or a first-stage cascade gives no probe: its callers fall back to comparing generations.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["ChangeLog", "IndexChange", "PoolProbe", "RankingProbe", "SCORE_SLACK", "pool_floor", "tied_concepts", "touches_pool"]

# Scores are float32 products computed in different ways (a BLAS block search, one vector against a few rows): a new
# name within this of a floor counts as joining the pool.
SCORE_SLACK = 1e-4


@dataclass(frozen=True)
class PoolProbe:
    """What one query's ranking was drawn from."""

    query: str  # normalised, as retrieval searched it
    vector: np.ndarray | None  # the query's dense vector; None: no dense search
    dense_floor: float  # lowest dense score admitted; -inf when the search returned fewer names than it asked for
    sparse_floor: float | None  # lowest tf-idf score admitted (-inf as above); None: no tf-idf search
    rows: np.ndarray  # the pool's name rows (int32: 512 bytes for a pool of 128)
    tied_concepts: frozenset[str] = frozenset()  # concepts with a row whose ranking key another concept's row shares


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
    names: frozenset[str] = frozenset()  # normalised forms of the names added or taken back
    everything: bool = False  # a change every ranking may feel (a new concept prior)


class ChangeLog:
    """The latest changes, oldest first; a ranking older than the oldest kept cannot be vouched for."""

    def __init__(self, size: int = 1024) -> None:
        self._changes: deque[IndexChange] = deque(maxlen=size)

    def record(self, change: IndexChange) -> None:
        self._changes.append(change)

    def since(self, generation: int, now: int) -> list[IndexChange] | None:
        """The changes after ``generation`` up to ``now``; None when the log no longer reaches back that far."""
        changes = [c for c in list(self._changes) if generation < c.generation <= now]
        if len(changes) != now - generation:
            return None
        return changes


def pool_floor(scores: np.ndarray, rows: np.ndarray, wanted: int) -> float:
    """The score a new name must reach to join a top list of ``wanted`` (its lowest); -inf when it has room."""
    kept = scores[rows >= 0]
    return float(kept.min()) if len(kept) >= wanted else float("-inf")


def touches_pool(pool: PoolProbe, pool_names: Sequence[str], changes: Sequence[IndexChange]) -> bool:
    """Whether a change reached a pool other than by a new name joining it (which needs the scores): a pool row
    taken back or supported more, a tied concept supported more, a name spelt as a pool name added or taken back."""
    rows = set(pool.rows.tolist())
    if any(r in rows for c in changes for r in (*c.removed_rows, *c.supported_rows)):
        return True
    if pool.tied_concepts and any(cid in pool.tied_concepts for c in changes for cid in c.supported_concepts):
        return True
    names = frozenset().union(*(c.names for c in changes))
    return any(name in names for name in pool_names)


def tied_concepts(keys: np.ndarray, concept_ids: Sequence[str]) -> frozenset[str]:
    """The concepts of the rows whose ranking key (score and prior) another concept's row has too: only between
    them does concept support decide the order."""
    out: set[str] = set()
    by_key: dict[float, set[str]] = {}
    for key, cid in zip(keys.tolist(), concept_ids, strict=True):
        by_key.setdefault(key, set()).add(cid)
    for owners in by_key.values():
        if len(owners) > 1:
            out |= owners
    return frozenset(out)
