"""Whether a ranking made earlier still holds after names came or went (curator synonyms added or taken back).

A caller that keeps rankings (the web app's candidate panel) must never show one the current index would not give.
Comparing the linker's generation is safe but coarse: one curator synonym anywhere sets aside every ranking kept,
and on a curator's path through a document each decision adds one. This module answers the finer question exactly.

Retrieval (:mod:`linker.retrieval`) scores only a *pool* per query: the dense search's top ``names_per_source`` name
rows and the tf-idf search's, each list cut at its lowest admitted score. Everything a ranking shows is a function
of that pool and of the pool rows' data: their scores, their concepts' support and prior (the tie-breaks and the
re-ranker's features), the concepts sharing their names (homonyms). So a ranking still holds after a change when

- no name added scores at least a pool's floor against the query (it would have joined the pool), and
- no name added or taken back belongs to a concept of the pool, nor shares its normalised form with a pool name
  (its support, candidates or homonyms would differ), and
- the concept prior did not change.

A name taken back that was not in the pool cannot matter: each search's top list is exact (a flat dense index, the
full tf-idf matrix), so dropping a name outside it leaves it as it was. An approximate index (HNSW, IVF) or a
first-stage cascade gives no probe: its callers fall back to comparing generations.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["ChangeLog", "IndexChange", "PoolProbe", "RankingProbe", "SCORE_SLACK"]

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
    concepts: frozenset[str] = frozenset()  # concepts of the names added or taken back
    names: frozenset[str] = frozenset()  # their normalised forms
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


def touches_pool(pool_concepts: Sequence[str], pool_names: Sequence[str], changes: Sequence[IndexChange]) -> bool:
    """Whether a change added or took back a name of a pool's concepts, or one spelt as a pool name."""
    concepts = frozenset().union(*(c.concepts for c in changes))
    names = frozenset().union(*(c.names for c in changes))
    return any(cid in concepts for cid in pool_concepts) or any(name in names for name in pool_names)
