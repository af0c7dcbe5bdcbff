"""A faiss inner-product index over name vectors, owning the faiss-row -> name-row map.

Name rows are positions in a :class:`linker.dictionary.NameTable` (which maps a row to its normalised
name, raw name and concept id); the index only knows vectors and those rows. It is built once and never changed:
curator names added since the build are a delta scored beside it (:mod:`linker.delta`).

Kinds: ``flat`` (exact), ``hnsw`` (graph), ``ivf`` and ``ivfpq`` (inverted lists, of product-quantised codes for
the latter): :mod:`linker.index_kinds`, with their settings (:class:`linker.index_kinds.IndexConfig`).

A copy of the vectors is kept so that scores of arbitrary (query, name) pairs can be computed for hybrid retrieval
and so that ``save``/``load`` round-trip exactly: float32, or float16 (``vector_dtype``) to halve it at millions of
names. The quantised kinds (``ivfpq``, ``hnsw`` with ``sq8``) fetch ``refine`` times k candidates and re-rank them
with that copy, so the order they return is by the exact inner product.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import faiss
import numpy as np

from linker.index_kinds import IndexConfig, new_faiss_index, with_search_settings
from linker.topk import padded_rows, top_k_columns

__all__ = ["DenseIndex"]


class DenseIndex:
    """Inner-product search over name vectors; ``search`` returns name rows (not faiss ids)."""

    def __init__(self, dim: int, config: IndexConfig | None = None) -> None:
        self.dim = dim
        self.config = config or IndexConfig()
        self._index: faiss.Index | None = None
        self._vectors = np.zeros((0, dim), dtype=np.float32)  # the configured dtype once built
        self._rows = np.zeros(0, dtype=np.int64)  # faiss id -> name row
        # name row -> faiss id (-1: not indexed). An array, not a dict: at millions of names a dict costs
        # hundreds of MB and seconds to rebuild on load.
        self._position = np.zeros(0, dtype=np.int64)

    def __len__(self) -> int:
        return int(self._rows.shape[0])

    @property
    def rows(self) -> np.ndarray:
        return self._rows

    @classmethod
    def build(cls, vectors: np.ndarray, rows: np.ndarray | None = None, config: IndexConfig | None = None) -> DenseIndex:
        """An index over ``vectors`` [n, d]; ``rows`` [n] are their name rows (default 0..n-1, each once, >= 0)."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2:
            raise ValueError(f"expected vectors of shape [n, d], got {vectors.shape}")
        rows_arr = np.arange(len(vectors), dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
        if len(rows_arr) != len(vectors):
            raise ValueError(f"{len(vectors)} vectors but {len(rows_arr)} rows")
        if len(rows_arr) and (rows_arr.min() < 0 or len(np.unique(rows_arr)) != len(rows_arr)):
            raise ValueError("name rows are >= 0 and each indexed once")
        index = cls(vectors.shape[1], config)
        index.config = index.config.resolved(len(vectors))
        index._index = new_faiss_index(index.config, index.dim, vectors)
        index._index.add(vectors)
        index._vectors = vectors.astype(index.config.vector_dtype)
        index._rows = rows_arr
        index._position = _positions(rows_arr)
        return index

    def search(self, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Queries [n, d] -> (scores [n, k] float32, name rows [n, k] int64; -1 where fewer than k)."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        n = len(vectors)
        if self._index is None or len(self) == 0 or k <= 0:
            return np.zeros((n, max(k, 0)), np.float32), np.full((n, max(k, 0)), -1, np.int64)
        if self.config.kind == "flat":
            # Exact search as one BLAS product per block: on a small shared CPU this is 3-4x faster than
            # faiss's flat search with k ~ 64 (the faiss index is still kept and saved).
            scores, ids = _exact_top_k(self._vectors, vectors, k)
        elif self.config.quantised:
            scores, ids = self._refined(vectors, k)
        else:
            scores, ids = self._index.search(vectors, k)
        rows = np.where(ids >= 0, self._rows[np.clip(ids, 0, None)], -1)
        return scores.astype(np.float32), rows.astype(np.int64)

    def _refined(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """A quantised index's ``refine * k`` nearest codes, re-ranked by the exact inner product."""
        assert self._index is not None
        _, ids = self._index.search(queries, k * self.config.refine)
        scores = np.full(ids.shape, -np.inf, dtype=np.float32)
        for i in range(len(queries)):
            valid = ids[i] >= 0
            scores[i, valid] = self._vectors[ids[i, valid]].astype(np.float32) @ queries[i]
        order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        top_scores = np.take_along_axis(scores, order, axis=1)
        top_ids = np.where(np.isfinite(top_scores), np.take_along_axis(ids, order, axis=1), -1)
        return top_scores, top_ids

    def vectors(self, rows: np.ndarray | list[int]) -> np.ndarray:
        """Stored vectors of name rows [n] -> [n, d] (float32)."""
        return self._vectors[self._position[np.asarray(rows, dtype=np.int64).ravel()]].astype(np.float32)

    def pair_scores(self, queries: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Inner products of queries [n, d] with the names at ``rows`` [n, m] -> [n, m] (-1 rows: -inf)."""
        out = np.full(rows.shape, -np.inf, dtype=np.float32)
        valid = (rows >= 0) & (rows < len(self._position))
        pos = np.full(rows.shape, -1, dtype=np.int64)
        pos[valid] = self._position[rows[valid]]
        valid &= pos >= 0  # a row of the name table this index does not hold
        if not valid.any():
            return out
        # Row by row keeps the temporary [m, d] small whatever n is.
        for i in range(rows.shape[0]):
            v = valid[i]
            out[i, v] = self._vectors[pos[i, v]].astype(np.float32) @ queries[i]
        return out

    # --- persistence --------------------------------------------------------------------------------

    def save(self, folder: str | Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        if self._index is not None:
            faiss.write_index(self._index, str(folder / "index.faiss"))
        np.save(folder / "vectors.npy", self._vectors)
        np.save(folder / "rows.npy", self._rows)
        meta = {"dim": self.dim, "config": asdict(self.config), "size": len(self)}
        (folder / "index.json").write_text(json.dumps(meta, indent=2) + "\n")

    @classmethod
    def load(cls, folder: str | Path) -> DenseIndex:
        folder = Path(folder)
        meta = json.loads((folder / "index.json").read_text())
        index = cls(int(meta["dim"]), IndexConfig(**meta["config"]))
        index._vectors = np.load(folder / "vectors.npy")  # saved in the dtype it was kept in
        index._rows = np.load(folder / "rows.npy")
        index._position = _positions(index._rows)
        if (folder / "index.faiss").exists():
            index._index = with_search_settings(faiss.read_index(str(folder / "index.faiss")), index.config)
        return index


def _positions(rows: np.ndarray) -> np.ndarray:
    """name row -> faiss id (-1: a row not indexed)."""
    position = np.full(int(rows.max()) + 1 if len(rows) else 0, -1, dtype=np.int64)
    position[rows] = np.arange(len(rows))
    return position


def _exact_top_k(base: np.ndarray, queries: np.ndarray, k: int, block: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """Top-k inner products of queries [n, d] against base [N, d]: (scores [n, k], ids [n, k]; -1 past N).

    Scores come as one BLAS product per block of queries, laid out [N, b] so that the block-max pruning of
    :func:`linker.topk.top_k_columns` selects the k best without an argpartition over every name (that
    argpartition took longer than the product). Ties are ordered by id.
    """
    n, total = len(queries), len(base)
    kk = min(k, total)
    scores = np.full((n, k), -np.inf, dtype=np.float32)
    ids = np.full((n, k), -1, dtype=np.int64)
    if kk == 0:
        return scores, ids
    padded = padded_rows(total)
    for start in range(0, n, block):
        q = queries[start : start + block]
        sim = np.empty((padded, len(q)), dtype=np.float32)
        sim[total:] = -np.inf
        np.matmul(base, q.T, out=sim[:total])  # [N, b]
        top_scores, top_ids = top_k_columns(sim, kk)
        ids[start : start + len(q), :kk] = top_ids
        scores[start : start + len(q), :kk] = top_scores
    return scores, ids
