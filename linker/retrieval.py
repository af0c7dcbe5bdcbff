"""Hybrid sparse + dense candidate generation (BioSyn, Sung et al. 2020, eq. 5).

S(m, n) = dense_scale · cos(e_m, e_n) + λ · tfidf(m, n), computed over the union of the dense top-k and the
sparse top-k name rows of each query (an exhaustive S over all names would need the sparse scores of every
name for every query; the union of both top lists contains the names that can win). Names are then ranked
at the concept level: a concept scores as its best name, and that name is the one reported.

Queries must already be normalised (see :class:`linker.text.Preprocessor`); :class:`linker.linker.Linker`
does that and handles abbreviations and composite mentions.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, NamedTuple

import numpy as np

from linker.dictionary import NameTable
from linker.encoders.base import NameEncoder
from linker.index import DenseIndex
from linker.memo import QueryMemo
from linker.overlap import beside
from linker.sparse import SparseEncoder

if TYPE_CHECKING:
    from linker.delta import DeltaRows

__all__ = ["Candidate", "RetrievalConfig", "HybridRetriever", "Mode", "Cascade", "FirstStage", "encode_names", "Progress",
           "PROGRESS_CHUNK"]

Mode = Literal["hybrid", "dense", "sparse"]
# With a first stage (a fast encoder in front of the transformer): "off" encodes every query with both;
# "exact" encodes with the transformer only the queries that are not a dictionary name as they stand. An
# exact name already scores the maximum S (cosine 1 with itself under any encoder, tf-idf 1), so its top
# concept cannot change; only the order of its runners-up comes from the fast encoder.
Cascade = Literal["off", "exact"]


class Candidate(NamedTuple):
    """One ranked concept for a query."""

    concept_id: str
    name: str  # the raw dictionary name that matched best
    score: float  # S = dense_scale·dense + λ·sparse (hybrid), or the one score the mode uses
    dense: float  # cosine of query and name vectors (nan in sparse mode when not computed)
    sparse: float  # tf-idf cosine
    part: int = 0  # which part of a composite mention the candidate is for (see Linker.link_mentions)


@dataclass(frozen=True)
class RetrievalConfig:
    mode: Mode = "hybrid"
    sparse_weight: float = 1.0  # λ (learned by BioSyn)
    dense_scale: float = 20.0
    # Name rows taken from each of the dense and sparse lists before concept-level ranking; a concept has
    # several names, so more names than k are needed to fill k concepts.
    names_per_source: int = 64
    batch_size: int = 512
    # Weight of a concept prior (log(1 + training annotations of the concept)) added to the ranking key,
    # not to the reported score. Small: it breaks ties between concepts sharing an exact name (MEDIC has
    # many MeSH/OMIM pairs with identical names) in favour of the concept annotators actually use.
    prior_weight: float = 0.0
    # False: the sparse encoder scores only the dense candidates and does not search all names itself. The
    # tf-idf search costs ~2 ms a query over MEDIC's 73K names (more than a fast encoder's whole pass), and
    # an encoder that reads characters (BNE) already brings the lexical neighbours.
    sparse_search: bool = True
    cascade: Cascade = "off"


@dataclass(frozen=True)
class FirstStage:
    """A fast encoder and its index over the same name rows, in front of the linker's transformer."""

    encoder: NameEncoder
    index: DenseIndex


# ``progress(done, total)``: called as names are encoded (distinct names done of all distinct names), first with
# done = 0. It may raise to stop the work (a cancelled build): the exception goes through to the caller.
Progress = Callable[[int, int], None]

# Names encoded between two progress reports at first: about a second of MiniLM on a CPU core pair. Doubled while a
# chunk takes less than PROGRESS_QUICK_S (BNE, DAN, a GPU), up to PROGRESS_MAX_CHUNK, so that fast encoders are not
# slowed by small calls.
PROGRESS_CHUNK = 512
PROGRESS_QUICK_S = 0.25
PROGRESS_MAX_CHUNK = 65536


def encode_names(
    encoder: NameEncoder, names: Sequence[str], batch_size: int = 512, progress: Progress | None = None
) -> np.ndarray:
    """Vectors for ``names`` [n, h], encoding each distinct string once (one name often has several ids).

    With ``progress``, the distinct names are encoded in chunks of about :data:`PROGRESS_CHUNK`, with a report after
    each: see :func:`_encode_reporting`. The vectors are those of one call."""
    unique: dict[str, int] = {}
    positions = np.fromiter((unique.setdefault(n, len(unique)) for n in names), dtype=np.int64, count=len(names))
    distinct = list(unique)
    if progress is None:
        vectors = encoder.encode(distinct, batch_size=batch_size)
    else:
        vectors = _encode_reporting(encoder, distinct, batch_size, progress)
    return vectors[positions]


def _encode_reporting(encoder: NameEncoder, texts: list[str], batch_size: int, progress: Progress) -> np.ndarray:
    """``encoder.encode(texts)`` in chunks, reporting after each.

    A transformer sorts its input by length and cuts it into batches in that order. Here the texts are sorted and
    cut the same way, and chunk j takes batches j, j + k, j + 2k ... of the k chunks: within a chunk they stay in
    length order, so the transformer forms the very same batches (the same vectors as one call), and every chunk
    holds short names and long ones alike, so names/s holds steady and the time left it predicts is right (the
    shortest names first would make a long build look faster than it is). BNE and DAN encode each name on its own."""
    n = len(texts)
    progress(0, n)
    if n == 0:
        return encoder.encode(texts, batch_size=batch_size)
    order = np.argsort([len(t) for t in texts], kind="stable")  # the transformer's own order
    run_batch_size = getattr(encoder, "run_batch_size", None)  # a transformer's batches (64 on a CPU)
    size = max(1, run_batch_size(batch_size) if callable(run_batch_size) else batch_size)
    batches = [order[i : i + size] for i in range(0, n, size)]
    per_chunk = max(1, -(-PROGRESS_CHUNK // size))
    k = -(-len(batches) // per_chunk)
    out: np.ndarray | None = None
    done, chunk, group = 0, 0, 1
    while chunk < k:
        began = time.perf_counter()
        members = sorted(b for c in range(chunk, min(k, chunk + group)) for b in range(c, len(batches), k))
        idx = np.concatenate([batches[b] for b in members])
        vectors = encoder.encode([texts[i] for i in idx], batch_size=batch_size)
        if out is None:
            out = np.zeros((n, vectors.shape[1]), dtype=vectors.dtype)
        out[idx] = vectors
        done, chunk = done + len(idx), chunk + group
        progress(done, n)
        if time.perf_counter() - began < PROGRESS_QUICK_S and 2 * group * per_chunk * size <= PROGRESS_MAX_CHUNK:
            group *= 2
    assert out is not None
    return out


@dataclass
class _Pool:
    """What one batch's searches found: each query's pooled name rows [n, u] (-1 padded) and the dense query vectors
    by index."""

    rows: np.ndarray
    dense_vectors: list[tuple[DenseIndex, np.ndarray, np.ndarray]] = field(default_factory=list)  # index, vectors, ids


class HybridRetriever:
    """``retrieve(queries, k) -> list[list[Candidate]]``, modes hybrid / dense-only / sparse-only."""

    def __init__(
        self,
        table: NameTable,
        sparse: SparseEncoder | None,
        encoder: NameEncoder | None,
        index: DenseIndex | None,
        config: RetrievalConfig | None = None,
        concept_prior: dict[str, float] | None = None,
        first_stage: FirstStage | None = None,
        delta: DeltaRows | None = None,
        memo: QueryMemo | None = None,
    ) -> None:
        self.table = table
        self.first_stage = first_stage
        # Names added and taken back over these immutable indexes (linker.delta): merged into every search's list.
        self.delta = delta
        # The base's searches, kept per query for the base's lifetime (linker.memo): the base's part of a ranking is
        # the same under every delta. A delta view always reads it; a base linker where it is served
        # (Linker.remember_searches: its weights never change, and a corpus meets the same mentions again and again).
        self.memo = memo
        self.concept_prior: dict[str, float] = dict(concept_prior or {})
        self.sparse = sparse
        self.encoder = encoder
        self.index = index
        self.config = config or RetrievalConfig()
        mode = self.config.mode
        if mode in ("hybrid", "sparse") and sparse is None:
            raise ValueError(f"mode {mode!r} needs a sparse encoder")
        if mode in ("hybrid", "dense") and (encoder is None or index is None):
            raise ValueError(f"mode {mode!r} needs an encoder and a dense index")

    def retrieve(self, queries: Sequence[str], k: int = 20, mode: Mode | None = None) -> list[list[Candidate]]:
        """Top-k concepts per normalised query, best first."""
        return self._retrieve(queries, k, mode or self.config.mode)

    def _retrieve(self, queries: Sequence[str], k: int, mode: Mode) -> list[list[Candidate]]:
        # Identical queries (frequent: a document repeats its mentions) are scored once.
        unique: dict[str, int] = {}
        for q in queries:
            unique.setdefault(q, len(unique))
        distinct = list(unique)
        bs = self.config.batch_size
        ranked: list[list[Candidate]] = []
        for start in range(0, len(distinct), bs):
            ranked.extend(self._retrieve_batch(distinct[start : start + bs], k, mode))
        return [ranked[unique[q]] for q in queries]

    def _retrieve_batch(self, queries: list[str], k: int, mode: Mode) -> list[list[Candidate]]:
        m = max(self.config.names_per_source, k)
        pool = self._search(queries, m, mode)
        rows = pool.rows
        dense = np.full(rows.shape, np.nan, dtype=np.float32)
        sparse = np.full(rows.shape, np.nan, dtype=np.float32)
        delta = self.delta
        for index, vectors, ids in pool.dense_vectors:
            scored = index.pair_scores(vectors, rows[ids])
            if delta is not None:
                delta.fill_dense(scored, delta.fast if index is not self.index else delta.dense, vectors, rows[ids])
            dense[ids] = scored
        if mode != "dense" or self.sparse is not None:
            # Sparse scores are cheap and shown to curators even in dense mode.
            assert self.sparse is not None
            base_rows = np.where(rows >= 0, rows, 0) if delta is None else np.where((rows >= 0) & (rows < delta.start), rows, 0)
            sparse = self.sparse.score(queries, base_rows)
            if delta is not None:
                delta.fill_sparse(sparse, self.sparse, queries, rows)
        total, key = self._ranking_keys(rows, dense, sparse, mode)
        return self._ranked(rows, total, key, dense, sparse, k)

    def _search(self, queries: list[str], m: int, mode: Mode) -> _Pool:
        """The rows each query's searches list, ``m`` per source: the first stage's, the transformer's (the
        cascade leaves out queries that are a dictionary name) and tf-idf's."""
        cfg = self.config
        n = len(queries)
        lists: list[np.ndarray] = []
        pool = _Pool(np.zeros((n, 0), dtype=np.int64))
        # The tf-idf search waits for nothing: beside the query encoding and the dense search (linker.overlap).
        sparse_search = (beside(self._sparse_top, queries, m)
                         if mode == "hybrid" and cfg.sparse_search and self.sparse is not None else None)
        if mode in ("hybrid", "dense"):
            assert self.encoder is not None and self.index is not None
            everyone = np.arange(n)
            stage = self.first_stage
            if stage is None:
                slow = everyone
            else:
                fast = self._encode(stage.encoder, queries)
                lists.append(self._dense_top(stage.index, fast, m, queries)[1])
                pool.dense_vectors.append((stage.index, fast, everyone))
                slow = everyone if cfg.cascade == "off" else np.array(
                    [i for i, q in enumerate(queries) if not self.table.concepts_named(q)], dtype=np.int64)
            if len(slow):
                slow_queries = [queries[i] for i in slow]
                qvec = self._encode(self.encoder, slow_queries)
                slow_rows = np.full((n, m), -1, dtype=np.int64)
                slow_rows[slow] = self._dense_top(self.index, qvec, m, slow_queries)[1]
                lists.append(slow_rows)
                pool.dense_vectors.append((self.index, qvec, slow))  # last: the transformer's scores win
        if sparse_search is not None:
            lists.append(sparse_search.result()[1])  # after the dense lists, as when it ran here
        elif mode == "sparse" or (mode == "hybrid" and not lists):
            assert self.sparse is not None
            lists.append(self._sparse_top(queries, m)[1])
        rows = _union_rows(lists)  # [n, u], -1 padded
        if self.table.removed and self.delta is None:
            # Rows of a table saved with names taken back (before linkers were immutable): listed by no search.
            rows = np.where(np.isin(rows, np.fromiter(self.table.removed, dtype=np.int64)), -1, rows)
        pool.rows = rows
        return pool

    def _encode(self, encoder: NameEncoder, queries: list[str]) -> np.ndarray:
        """The queries' vectors from ``encoder`` (a delta view reads the ones its base encoded before)."""
        batch = self.config.batch_size
        if self.memo is None:
            return encoder.encode(queries, batch_size=batch)
        return self.memo.encode(id(encoder), queries, lambda todo: encoder.encode(todo, batch_size=batch))

    def _dense_top(self, index: DenseIndex, vectors: np.ndarray, m: int, queries: list[str]
                   ) -> tuple[np.ndarray, np.ndarray]:
        """A dense index's top ``m`` names for query vectors: with a delta, the base's merged with the delta's."""
        delta = self.delta
        if delta is None:
            if self.memo is None:
                return index.search(vectors, m)
            return self.memo.top(id(index), queries, m, lambda at: index.search(vectors[at], m))
        base_m = m + delta.hidden
        if self.memo is None:
            scores, rows = index.search(vectors, base_m)
        else:
            scores, rows = self.memo.top(id(index), queries, base_m, lambda at: index.search(vectors[at], base_m))
        which = delta.dense if index is self.index else delta.fast
        return delta.merged(scores, rows, delta.list_scores(vectors, which), m)

    def _sparse_top(self, queries: Sequence[str], m: int) -> tuple[np.ndarray, np.ndarray]:
        """tf-idf's top ``m`` names for queries: with a delta, the base's merged with the delta's."""
        sparse = self.sparse
        assert sparse is not None
        delta = self.delta
        if delta is None:
            if self.memo is None:
                return sparse.top_k(queries, m)
            return self.memo.top(id(sparse), queries, m, lambda at: sparse.top_k([queries[i] for i in at], m))
        base_m = m + delta.hidden
        if self.memo is None:
            scores, rows = sparse.top_k(queries, base_m)
        else:
            scores, rows = self.memo.top(id(sparse), queries, base_m,
                                         lambda at: sparse.top_k([queries[i] for i in at], base_m))
        return delta.merged(scores, rows, delta.sparse_list_scores(sparse, queries), m)

    def _ranked(self, rows: np.ndarray, total: np.ndarray, key: np.ndarray, dense: np.ndarray, sparse: np.ndarray,
                k: int) -> list[list[Candidate]]:
        """Each query's top-k concepts (the best-ranked name of each)."""
        out: list[list[Candidate]] = []
        table = self.table
        # Exact ties are common (one MEDIC name shared by a MeSH and an OMIM concept): break them by how often
        # merged training mentions or curators attested the name, then the concept (NameTable.tie_key), then the
        # row (the dictionary's own order), not by where the searches happened to list the tied names: that
        # order could change with any name added elsewhere in the index.
        tie_row, tie_concept = _tie_keys_for(self.table, rows)
        for i in range(len(rows)):
            order = np.lexsort((rows[i], -tie_concept[i], -tie_row[i], -key[i]))
            seen: set[str] = set()
            cands: list[Candidate] = []
            for j in order:
                r = int(rows[i, j])
                if r < 0 or not np.isfinite(total[i, j]):
                    break
                cid = table.concept_ids[r]
                if cid in seen:
                    continue
                seen.add(cid)
                cands.append(
                    Candidate(cid, table.raw_names[r], float(total[i, j]), float(dense[i, j]), float(sparse[i, j]))
                )
                if len(cands) == k:
                    break
            out.append(cands)
        return out

    def _ranking_keys(self, rows: np.ndarray, dense: np.ndarray, sparse: np.ndarray, mode: Mode
                      ) -> tuple[np.ndarray, np.ndarray]:
        """Each pooled row's score S (what a candidate reports) and its ranking key (S plus the weighted prior)."""
        cfg = self.config
        if mode == "hybrid":
            total = cfg.dense_scale * dense + cfg.sparse_weight * sparse
        elif mode == "dense":
            total = dense.copy()
        else:
            total = sparse.copy()
        total = np.where(rows >= 0, total, -np.inf)
        key = total
        if cfg.prior_weight and self.concept_prior:
            prior = self.concept_prior
            concept_ids = self.table.concept_ids
            bonus = np.array([[prior.get(concept_ids[r], 0.0) if r >= 0 else 0.0 for r in row] for row in rows],
                             dtype=np.float32)
            key = total + cfg.prior_weight * bonus
        return total, key


def _tie_keys_for(table: NameTable, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # Only the candidates' rows are read: converting the whole row_support list took 120 ms a query at 3M names.
    support, concept, concept_ids = table.row_support, table.concept_support, table.concept_ids
    listed = rows.tolist()
    tie_row = np.array([[support[r] if r >= 0 else 0 for r in row] for row in listed], dtype=np.int64).reshape(rows.shape)
    tie_concept = np.array(
        [[concept.get(concept_ids[r], 0) if r >= 0 else 0 for r in row] for row in listed], dtype=np.int64
    ).reshape(rows.shape)
    return tie_row, tie_concept


def _union_rows(lists: list[np.ndarray]) -> np.ndarray:
    """Row-wise union of several [n, m_i] int arrays (-1 = none), order of first appearance, -1 padded."""
    if len(lists) == 1:
        return lists[0]
    n = lists[0].shape[0]
    merged = np.concatenate(lists, axis=1)
    width = merged.shape[1]
    out = np.full((n, width), -1, dtype=np.int64)
    for i in range(n):
        row = merged[i]
        row = row[row >= 0]
        _, first = np.unique(row, return_index=True)
        keep = row[np.sort(first)]
        out[i, : len(keep)] = keep
    return out
