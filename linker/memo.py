"""Bounded memos of what an immutable linker computes per query: a served base linker keeps them for its lifetime.

A served linker's base never changes (:mod:`linker.delta`); only the small delta of curator names does, and each
new delta is a new linker view over the same base. What the base computes for a query — its encoders' vectors
and its indexes' top lists — is therefore the same under every delta: a view reads it here instead of computing it
again, and merges the delta's exactly scored names into it as before. So a mention ranked a moment ago, then again
after another curator's decision changed the delta, costs only the delta's part and the ranking itself.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

import numpy as np

__all__ = ["Memo", "QueryMemo"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

# Per base linker: a panel's mentions of about 500 documents. A sparse top list of 40 names is under 1 KB, a
# 384-d query vector 1.5 KB: a few MB at most.
QUERIES_KEPT = 8192


class Memo(Generic[K, V]):
    """A thread-safe map that forgets its least recently used entries beyond ``size``."""

    def __init__(self, size: int = QUERIES_KEPT) -> None:
        self.size = size
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def many(self, keys: Sequence[K], compute: Callable[[list[int]], Sequence[V]]) -> list[V]:
        """The values of ``keys``: those not kept are computed together (``compute`` gets their positions in
        ``keys`` and returns their values in that order) and kept."""
        found: list[V | None] = [self.get(k) for k in keys]
        missing = [i for i, v in enumerate(found) if v is None]
        if missing:
            for i, value in zip(missing, compute(missing), strict=True):
                self.put(keys[i], value)
                found[i] = value
        return [v for v in found if v is not None]


class QueryMemo:
    """What a base linker's searches computed per query, shared by every delta view of it.

    ``vectors``: a query's vector from one encoder (keyed by the encoder object's id and the query);
    ``lists``: one search's top list of a query, (scores, rows) of ``m`` names (keyed by the index searched, the
    query and ``m``: a list cut at another length could break a tie at the cut differently)."""

    def __init__(self, size: int = QUERIES_KEPT) -> None:
        self.vectors: Memo[tuple[int, str], np.ndarray] = Memo(size)
        self.lists: Memo[tuple[int, str, int], tuple[np.ndarray, np.ndarray]] = Memo(size)

    def encode(self, encoder_key: int, queries: Sequence[str], encode: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        """[len(queries), d]: each query's vector, those not kept encoded together."""
        if not queries:
            return encode([])
        rows = self.vectors.many([(encoder_key, q) for q in queries],
                                 lambda at: list(encode([queries[i] for i in at])))
        return np.stack(rows)

    def top(self, index_key: int, queries: Sequence[str], m: int,
            search: Callable[[list[int]], tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
        """(scores, rows) [len(queries), m]: each query's top list, those not kept searched together (``search``
        gets their positions in ``queries``)."""

        def compute(at: list[int]) -> list[tuple[np.ndarray, np.ndarray]]:
            scores, rows = search(at)
            return [(scores[j], rows[j]) for j in range(len(at))]

        lists = self.lists.many([(index_key, q, m) for q in queries], compute)
        if not lists:
            return np.zeros((0, m), dtype=np.float32), np.zeros((0, m), dtype=np.int64)
        return np.stack([s for s, _ in lists]), np.stack([r for _, r in lists])
