"""A faiss inner-product index over name vectors, owning the faiss-row -> name-row map.

Name rows are positions in a :class:`linker.dictionary.NameTable` (which maps a row to its normalised
name, raw name and concept id); the index only knows vectors and those rows, so a curator synonym added to
the table is made searchable with ``add(vectors, rows)`` and no rebuild.

Kinds: ``flat`` (exact), ``hnsw`` (graph), ``ivf`` and ``ivfpq`` (inverted lists, of product-quantised codes for
the latter): :mod:`linker.index_kinds`, with their settings (:class:`linker.index_kinds.IndexConfig`).

A copy of the vectors is kept so that scores of arbitrary (query, name) pairs can be computed for hybrid retrieval
and so that ``save``/``load`` round-trip exactly: float32, or float16 (``vector_dtype``) to halve it at millions of
names. The quantised kinds (``ivfpq``, ``hnsw`` with ``sq8``) fetch ``refine`` times k candidates and re-rank them
with that copy, so the order they return is by the exact inner product.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
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
        self._vectors = np.zeros((0, dim), dtype=np.float32)  # the configured dtype once built (_new_faiss)
        self._rows = np.zeros(0, dtype=np.int64)  # faiss id -> name row
        # name row -> faiss id (-1: not indexed). An array, not a dict: at millions of names a dict costs
        # hundreds of MB and seconds to rebuild on load.
        self._position = np.zeros(0, dtype=np.int64)
        # Name rows taken back (an undone curator synonym): faiss cannot delete from every index kind (HNSW),
        # so their vectors stay and search skips them; a rebuild drops them for good.
        self._masked: set[int] = set()
        # faiss's IVF inverted lists and HNSW graph grow in place: an add while another thread searches them reads
        # freed memory and aborts the process. Searches share the faiss index, an add has it alone.
        self._faiss_lock = _SharedLock()

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
        self.config = self.config.resolved(len(train_vectors))
        self._vectors = self._vectors.astype(self.config.vector_dtype)
        return new_faiss_index(self.config, self.dim, train_vectors)

    def add(self, vectors: np.ndarray, rows: np.ndarray | list[int]) -> None:
        """Append vectors [n, d] for name rows [n]; searchable by the next ``search`` call."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        rows_arr = np.asarray(rows, dtype=np.int64)
        if vectors.ndim != 2 or vectors.shape[1] != self.dim:
            raise ValueError(f"expected vectors of shape [n, {self.dim}], got {vectors.shape}")
        if len(rows_arr) != len(vectors):
            raise ValueError(f"{len(vectors)} vectors but {len(rows_arr)} rows")
        if len(rows_arr) and rows_arr.min() < 0:
            raise ValueError("name rows are >= 0")
        known = rows_arr[rows_arr < len(self._position)]
        dup = known[self._position[known] >= 0]
        if len(dup) or len(np.unique(rows_arr)) != len(rows_arr):
            shown = dup[:5].tolist() or [int(r) for r, c in zip(*np.unique(rows_arr, return_counts=True), strict=True) if c > 1][:5]
            raise ValueError(f"name rows already indexed: {shown}")
        if self._index is None:
            self._index = self._new_faiss(vectors)
        start = len(self._rows)
        # Searches of other threads read these without a lock (a web process's curators): each array is extended
        # before anything can point into it -- the rows before the vectors the exact search returns ids of, both
        # before the positions pair_scores follows, all before faiss can return the new ids. An old view never
        # sees the rows written after it.
        self._rows = _appended(self._rows, rows_arr)
        self._vectors = _appended(self._vectors, vectors.astype(self._vectors.dtype, copy=False))
        if len(rows_arr):
            size = max(len(self._position), int(rows_arr.max()) + 1)
            position = self._position
            if size > len(position):
                position = _appended(position, np.full(size - len(position), -1, np.int64))
            position[rows_arr] = np.arange(start, start + len(rows_arr))
            self._position = position
        with self._faiss_lock.exclusive():
            self._index.add(vectors)

    @property
    def masked(self) -> frozenset[int]:
        return frozenset(self._masked)

    def mask(self, rows: np.ndarray | list[int]) -> None:
        """Stop returning name rows ``rows`` from :meth:`search` (rows not indexed are ignored)."""
        # A new set, not an update: searches in other threads iterate the one they read.
        self._masked = self._masked | {int(r) for r in np.asarray(rows, dtype=np.int64).ravel() if self._has(int(r))}

    def _has(self, row: int) -> bool:
        return 0 <= row < len(self._position) and bool(self._position[row] >= 0)

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
        elif self.config.quantised:
            scores, ids = self._refined(vectors, wanted)
        else:
            with self._faiss_lock.shared():
                scores, ids = self._index.search(vectors, wanted)
        rows = np.where(ids >= 0, self._rows[np.clip(ids, 0, None)], -1)
        scores, rows = scores.astype(np.float32), rows.astype(np.int64)
        if self._masked:
            scores, rows = _without_rows(scores, rows, self._masked, k)
        return scores, rows

    def _refined(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """A quantised index's ``refine * k`` nearest codes, re-ranked by the exact inner product."""
        assert self._index is not None
        with self._faiss_lock.shared():
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
        if self._masked:
            np.save(folder / "masked.npy", np.array(sorted(self._masked), dtype=np.int64))
        meta = {"dim": self.dim, "config": asdict(self.config), "size": len(self)}
        (folder / "index.json").write_text(json.dumps(meta, indent=2) + "\n")

    @classmethod
    def load(cls, folder: str | Path) -> DenseIndex:
        folder = Path(folder)
        meta = json.loads((folder / "index.json").read_text())
        index = cls(int(meta["dim"]), IndexConfig(**meta["config"]))
        # Read into buffers with headroom, so that the first curator synonym does not copy them (a second at 3M).
        index._vectors = _loaded_with_headroom(folder / "vectors.npy")  # saved in the dtype it was kept in
        index._rows = _loaded_with_headroom(folder / "rows.npy")
        size = int(index._rows.max()) + 1 if len(index._rows) else 0
        index._position = _appended(np.zeros(0, dtype=np.int64), np.full(size, -1, dtype=np.int64))
        index._position[index._rows] = np.arange(len(index._rows))
        if (folder / "masked.npy").exists():
            index._masked = {int(r) for r in np.load(folder / "masked.npy").tolist()}
        if (folder / "index.faiss").exists():
            index._index = with_search_settings(faiss.read_index(str(folder / "index.faiss")), index.config)
        return index


class _SharedLock:
    """Many readers or one writer; a waiting writer holds new readers back (a curator's synonym is not starved by a
    stream of searches)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writing = False
        self._writers_waiting = 0

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            while self._writing or self._writers_waiting:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            self._writers_waiting += 1
            while self._writing or self._readers:
                self._cond.wait()
            self._writers_waiting -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._cond:
                self._writing = False
                self._cond.notify_all()


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


def _appended(head: np.ndarray, extra: np.ndarray) -> np.ndarray:
    """``head`` followed by ``extra`` along the first axis, as a view of a buffer with room to spare.

    Curator synonyms arrive a few names at a time, and concatenating copied the whole array for each: the kept
    vectors of a 3M-name index (~1 GB) took about a second per decision, in every web process. When ``head`` is the
    start of a buffer this function made, ``extra`` is written after it in place; otherwise (or when it is full)
    a new buffer with a 1/32 headroom (at least 1,024 rows) is made.
    """
    used, need = len(head), len(head) + len(extra)
    buffer = head.base
    fits = (isinstance(buffer, np.ndarray) and buffer.dtype == head.dtype and buffer.shape[1:] == head.shape[1:]
            and buffer.shape[0] >= need and head.flags.c_contiguous
            and head.__array_interface__["data"][0] == buffer.__array_interface__["data"][0])
    if not fits:
        buffer = np.empty((need + max(need // 32, 1024), *head.shape[1:]), dtype=head.dtype)
        buffer[:used] = head
    assert isinstance(buffer, np.ndarray)
    buffer[used:need] = extra
    return buffer[:need]


def _loaded_with_headroom(path: Path) -> np.ndarray:
    """An .npy array read (through a memory map, so never held twice) into a buffer :func:`_appended` grows in place."""
    on_disk = np.load(path, mmap_mode="r")
    return _appended(np.zeros((0, *on_disk.shape[1:]), dtype=on_disk.dtype), on_disk)


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
