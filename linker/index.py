"""A faiss inner-product index over name vectors, owning the faiss-row -> name-row map.

Name rows are positions in a :class:`linker.dictionary.NameTable` (which maps a row to its normalised
name, raw name and concept id); the index only knows vectors and those rows, so a curator synonym added to
the table is made searchable with ``add(vectors, rows)`` and no rebuild.

Kinds: ``flat`` (exact; the default and right up to a few hundred thousand names), ``hnsw`` (graph; no
training, fast for millions) and ``ivf`` (inverted lists; trained on the vectors given to ``build``).
A float32 copy of the vectors is kept so that scores of arbitrary (query, name) pairs can be computed for
hybrid retrieval and so that ``save``/``load`` round-trip exactly.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import faiss
import numpy as np

from linker.topk import padded_rows, top_k_columns

__all__ = ["DenseIndex", "IndexConfig", "IndexKind"]

IndexKind = Literal["flat", "hnsw", "ivf"]


@dataclass(frozen=True)
class IndexConfig:
    kind: IndexKind = "flat"
    hnsw_m: int = 32
    hnsw_ef_search: int = 128
    hnsw_ef_construction: int = 80
    ivf_nlist: int = 0  # 0: about 4 * sqrt(n) lists
    ivf_nprobe: int = 16


class DenseIndex:
    """Inner-product search over name vectors; ``search`` returns name rows (not faiss ids)."""

    def __init__(self, dim: int, config: IndexConfig | None = None) -> None:
        self.dim = dim
        self.config = config or IndexConfig()
        self._index: faiss.Index | None = None
        self._vectors = np.zeros((0, dim), dtype=np.float32)
        self._rows = np.zeros(0, dtype=np.int64)  # faiss id -> name row
        self._position: dict[int, int] = {}  # name row -> faiss id
        # Name rows taken back (an undone curator synonym): faiss cannot delete from every index kind (HNSW),
        # so their vectors stay and search skips them; a rebuild drops them for good.
        self._masked: set[int] = set()

    def __len__(self) -> int:
        return int(self._rows.shape[0])

    @property
    def rows(self) -> np.ndarray:
        return self._rows

    @classmethod
    def build(cls, vectors: np.ndarray, rows: np.ndarray | None = None, config: IndexConfig | None = None) -> DenseIndex:
        """An index over ``vectors`` [n, d]; ``rows`` [n] are their name rows (default 0..n-1)."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        index = cls(vectors.shape[1], config)
        index._index = index._new_faiss(vectors)
        index.add(vectors, np.arange(len(vectors)) if rows is None else rows)
        return index

    def _new_faiss(self, train_vectors: np.ndarray) -> faiss.Index:
        cfg = self.config
        if cfg.kind == "flat":
            return faiss.IndexFlatIP(self.dim)
        if cfg.kind == "hnsw":
            hnsw = faiss.IndexHNSWFlat(self.dim, cfg.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            hnsw.hnsw.efConstruction = cfg.hnsw_ef_construction
            hnsw.hnsw.efSearch = cfg.hnsw_ef_search
            return hnsw
        if cfg.kind == "ivf":
            n = len(train_vectors)
            nlist = cfg.ivf_nlist or max(1, min(n // 39, int(4 * math.sqrt(max(n, 1)))))
            quantizer = faiss.IndexFlatIP(self.dim)
            ivf = faiss.IndexIVFFlat(quantizer, self.dim, nlist, faiss.METRIC_INNER_PRODUCT)
            if n == 0:
                raise ValueError("an ivf index needs vectors to train on")
            ivf.train(train_vectors)
            ivf.nprobe = min(cfg.ivf_nprobe, nlist)
            return ivf  # faiss's Python wrapper keeps a reference to the quantizer
        raise ValueError(f"unknown index kind {cfg.kind!r}; expected flat, hnsw or ivf")

    def add(self, vectors: np.ndarray, rows: np.ndarray | list[int]) -> None:
        """Append vectors [n, d] for name rows [n]; searchable by the next ``search`` call."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        rows_arr = np.asarray(rows, dtype=np.int64)
        if vectors.ndim != 2 or vectors.shape[1] != self.dim:
            raise ValueError(f"expected vectors of shape [n, {self.dim}], got {vectors.shape}")
        if len(rows_arr) != len(vectors):
            raise ValueError(f"{len(vectors)} vectors but {len(rows_arr)} rows")
        dup = [int(r) for r in rows_arr if int(r) in self._position]
        if dup:
            raise ValueError(f"name rows already indexed: {dup[:5]}")
        if self._index is None:
            self._index = self._new_faiss(vectors)
        start = len(self._rows)
        self._index.add(vectors)
        self._vectors = np.concatenate([self._vectors, vectors]) if len(self._vectors) else vectors.copy()
        self._rows = np.concatenate([self._rows, rows_arr])
        for offset, row in enumerate(rows_arr.tolist()):
            self._position[row] = start + offset

    @property
    def masked(self) -> frozenset[int]:
        return frozenset(self._masked)

    def mask(self, rows: np.ndarray | list[int]) -> None:
        """Stop returning name rows ``rows`` from :meth:`search` (rows not indexed are ignored)."""
        self._masked.update(int(r) for r in np.asarray(rows, dtype=np.int64).ravel() if int(r) in self._position)

    def search(self, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Queries [n, d] -> (scores [n, k] float32, name rows [n, k] int64; -1 where fewer than k)."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        n = len(vectors)
        if self._index is None or len(self) == 0 or k <= 0:
            return np.zeros((n, max(k, 0)), np.float32), np.full((n, max(k, 0)), -1, np.int64)
        # Masked rows may fill the top places: ask for as many more, then drop them.
        wanted = k + len(self._masked)
        if self.config.kind == "flat":
            # Exact search as one BLAS product per block: on a small shared CPU this is 3-4x faster than
            # faiss's flat search with k ~ 64 (the faiss index is still kept and saved).
            scores, ids = _exact_top_k(self._vectors, vectors, wanted)
        else:
            scores, ids = self._index.search(vectors, wanted)
        rows = np.where(ids >= 0, self._rows[np.clip(ids, 0, None)], -1)
        scores, rows = scores.astype(np.float32), rows.astype(np.int64)
        if self._masked:
            scores, rows = _without_rows(scores, rows, self._masked, k)
        return scores, rows

    def vectors(self, rows: np.ndarray | list[int]) -> np.ndarray:
        """Stored vectors of name rows [n] -> [n, d]."""
        return self._vectors[[self._position[int(r)] for r in np.asarray(rows).ravel()]]

    def pair_scores(self, queries: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Inner products of queries [n, d] with the names at ``rows`` [n, m] -> [n, m] (-1 rows: -inf)."""
        out = np.full(rows.shape, -np.inf, dtype=np.float32)
        valid = rows >= 0
        if not valid.any():
            return out
        pos = np.zeros(rows.shape, dtype=np.int64)
        lookup = self._position
        pos[valid] = [lookup[int(r)] for r in rows[valid]]
        # Row by row keeps the temporary [m, d] small whatever n is.
        for i in range(rows.shape[0]):
            v = valid[i]
            out[i, v] = self._vectors[pos[i, v]] @ queries[i]
        return out

    # --- persistence --------------------------------------------------------------------------------

    def save(self, folder: str | Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        if self._index is not None:
            faiss.write_index(self._index, str(folder / "index.faiss"))
        np.save(folder / "vectors.npy", self._vectors)
        np.save(folder / "rows.npy", self._rows)
        if self._masked:
            np.save(folder / "masked.npy", np.array(sorted(self._masked), dtype=np.int64))
        meta = {"dim": self.dim, "config": asdict(self.config), "size": len(self)}
        (folder / "index.json").write_text(json.dumps(meta, indent=2) + "\n")

    @classmethod
    def load(cls, folder: str | Path) -> DenseIndex:
        folder = Path(folder)
        meta = json.loads((folder / "index.json").read_text())
        index = cls(int(meta["dim"]), IndexConfig(**meta["config"]))
        index._vectors = np.load(folder / "vectors.npy")
        index._rows = np.load(folder / "rows.npy")
        index._position = {int(r): i for i, r in enumerate(index._rows.tolist())}
        if (folder / "masked.npy").exists():
            index._masked = {int(r) for r in np.load(folder / "masked.npy").tolist()}
        if (folder / "index.faiss").exists():
            loaded: Any = faiss.read_index(str(folder / "index.faiss"))
            if index.config.kind == "hnsw":
                loaded.hnsw.efSearch = index.config.hnsw_ef_search
            elif index.config.kind == "ivf":
                loaded.nprobe = index.config.ivf_nprobe
            index._index = loaded
        return index


def _without_rows(scores: np.ndarray, rows: np.ndarray, masked: set[int], k: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``k`` results per query that are not in ``masked``, in order; -1 / -inf padded."""
    out_scores = np.full((len(rows), k), -np.inf, dtype=np.float32)
    out_rows = np.full((len(rows), k), -1, dtype=np.int64)
    masked_arr = np.fromiter(masked, dtype=np.int64, count=len(masked))
    keep = (rows >= 0) & ~np.isin(rows, masked_arr)
    for i in range(len(rows)):
        kept = np.flatnonzero(keep[i])[:k]
        out_scores[i, : len(kept)] = scores[i, kept]
        out_rows[i, : len(kept)] = rows[i, kept]
    return out_scores, out_rows


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
