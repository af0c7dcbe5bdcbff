"""Character n-gram tf-idf, BioSyn's sparse representation (uni- and bi-grams by default).

The vocabulary and idf are learnt once from the dictionary's normalised names (:meth:`SparseEncoder.fit`);
vectors are l2-normalised so a dot product is a cosine. The artifact is plain JSON + NPY + NPZ (no pickle of
scikit-learn objects), and transforming goes through a fixed-vocabulary ``CountVectorizer`` plus our own idf
weighting both after ``fit`` and after ``load``, so a loaded encoder scores bit-for-bit like the saved one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

from linker.memo import Memo
from linker.topk import BLOCK, padded_rows, top_k_columns

__all__ = ["SparseEncoder"]

_FORMAT_VERSION = 1
# Most queries scored at once by top_k (see its docstring).
_MAX_CHUNK = 256
# Up to this many texts, transform reads and keeps each text's row in a memo (linker.memo): a mention's query is
# transformed by the search, the pair scores and a delta's scores alike, and scikit-learn's per-call overhead
# (about 1 ms) is most of a short text's cost. Longer lists (indexing names) go straight through.
_MEMO_BATCH = 64


class SparseEncoder:
    """tf-idf over character n-grams of already-normalised strings, with a top-k search over names."""

    def __init__(
        self, ngram_range: tuple[int, int] = (1, 2), analyzer: str = "char", n_threads: int | None = None
    ) -> None:
        self.ngram_range = (int(ngram_range[0]), int(ngram_range[1]))
        self.analyzer = analyzer
        self.n_threads = max(1, n_threads if n_threads is not None else min(2, os.cpu_count() or 1))
        self.vocabulary: dict[str, int] = {}
        self.idf: np.ndarray = np.zeros(0, dtype=np.float32)
        self._counter: CountVectorizer | None = None
        # Indexed names: [n_names, n_features] csr. No transpose is kept: scoring multiplies the names by the
        # dense queries (see _scores_by_name), and transposing MEDIC's 74K names again for every curator
        # synonym added live (each decision's, in every web process) cost 50-200 ms of CPU on 2 cores.
        self._names: sp.csr_matrix | None = None
        # Names scored from their texts instead of the matrix (see attach_texts): at 3M names the matrix is
        # ~1 GB of a served linker's memory, and a linker that does not search by tf-idf only scores its
        # dense candidates, a few dozen a query, which transforming costs a millisecond.
        self._texts: Sequence[str] | None = None
        self._rows: Memo[str, sp.csr_matrix] = Memo()  # a short text's tf-idf row (transform)

    # --- fitting and transforming ----------------------------------------------------------------

    def fit(self, names: Sequence[str], keep_matrix: bool = True) -> SparseEncoder:
        """Learn the vocabulary and idf from ``names`` and index them for :meth:`top_k`; with ``keep_matrix``
        False the names are scored from their texts (:meth:`attach_texts`) and no matrix is kept."""
        if len(names) == 0:
            raise ValueError("cannot fit a sparse encoder on no names")
        vec = TfidfVectorizer(analyzer=self.analyzer, ngram_range=self.ngram_range, lowercase=False, dtype=np.float32)
        vec.fit(names)
        self.vocabulary = {k: int(v) for k, v in vec.vocabulary_.items()}
        self.idf = np.asarray(vec.idf_, dtype=np.float32)
        self._counter = None
        self._rows.clear()
        if keep_matrix:
            self.set_names(names)
        else:
            self.attach_texts(names)
        return self

    def _count_vectorizer(self) -> CountVectorizer:
        if self._counter is None:
            if not self.vocabulary:
                raise RuntimeError("SparseEncoder is not fitted")
            self._counter = CountVectorizer(
                analyzer=self.analyzer,
                ngram_range=self.ngram_range,
                lowercase=False,
                vocabulary=self.vocabulary,
                dtype=np.float32,
            )
        return self._counter

    def transform(self, texts: Sequence[str]) -> sp.csr_matrix:
        """l2-normalised tf-idf rows, float32, one per text (unknown n-grams are ignored)."""
        if not 0 < len(texts) <= _MEMO_BATCH:
            return self._transform(texts)
        # Each row depends on its own text only, so rows kept from earlier calls stack to the very same matrix.
        rows = self._rows.many(list(texts), lambda at: [*self._transform([texts[i] for i in at])])
        out = sp.csr_matrix(sp.vstack(rows, format="csr"), dtype=np.float32)
        out.sort_indices()
        return out

    def _transform(self, texts: Sequence[str]) -> sp.csr_matrix:
        counts = self._count_vectorizer().transform(list(texts)).tocsr().astype(np.float32)
        x = counts.multiply(self.idf[None, :]).tocsr().astype(np.float32)
        norms = np.sqrt(np.asarray(x.multiply(x).sum(axis=1), dtype=np.float64)).ravel()
        norms[norms == 0] = 1.0
        x = sp.diags((1.0 / norms).astype(np.float32)) @ x
        out = sp.csr_matrix(x, dtype=np.float32)
        out.sort_indices()
        return out

    # --- the indexed names -------------------------------------------------------------------------

    def set_names(self, names: Sequence[str]) -> None:
        """Index ``names`` with the current vocabulary (no refit)."""
        self._texts = None
        self._set_matrix(self.transform(names))

    def attach_texts(self, texts: Sequence[str]) -> None:
        """Score rows from ``texts`` (row i is ``texts[i]``) transformed when they are scored, without a matrix.

        ``texts`` is read, not copied: pass the name table's own list. :meth:`score` stays exact; :meth:`top_k`
        builds the matrix on its first call (about 100 s at 3M names on 2 cores), for a linker switched to tf-idf
        search.
        """
        self._names = None
        self._texts = texts

    @property
    def keeps_matrix(self) -> bool:
        """False when rows are scored from attached texts (:meth:`attach_texts`) until a search needs more."""
        return self._texts is None

    def _set_matrix(self, m: sp.csr_matrix) -> None:
        self._names = sp.csr_matrix(m, dtype=np.float32)

    @property
    def n_names(self) -> int:
        if self._names is None:
            return 0 if self._texts is None else len(self._texts)
        return int(self._names.shape[0])

    def _require_names(self) -> sp.csr_matrix:
        texts = self._texts
        if texts is not None:
            # A search over all names needs the matrix: built once from the attached texts, kept from then on.
            self._set_matrix(self.transform(texts))
            self._texts = None
        if self._names is None:
            raise RuntimeError("no names indexed: call fit() or set_names() first")
        return self._names

    # --- search ------------------------------------------------------------------------------------

    def _scores_by_name(self, q: sp.csr_matrix) -> np.ndarray:
        """[n_padded_names, n_queries] float32 cosine scores of a batch; padding rows hold -inf."""
        names = self._require_names()
        # names [N, V] (csr) @ q.T [V, b] (dense): scipy's csr x dense kernel walks the names' rows once and
        # does an axpy over the batch per non-zero. A sparse x sparse product is several times slower here
        # because its output is dense anyway (unigrams occur in almost every name). Row blocks run in
        # threads (the sparsetools kernels release the GIL).
        qd = np.ascontiguousarray(q.T.toarray(), dtype=np.float32)
        n = names.shape[0]
        padded = padded_rows(n)
        out = np.empty((padded, qd.shape[1]), dtype=np.float32)
        out[n:] = -np.inf
        # The process's compute-thread budget (linker.device.limit_threads sets torch's) caps this pool too.
        threads = min(self.n_threads, max(1, torch.get_num_threads())) if n >= 20000 else 1
        bounds = [(n * i // threads) // BLOCK * BLOCK for i in range(threads)] + [n]

        def work(i: int) -> None:
            lo, hi = bounds[i], bounds[i + 1]
            out[lo:hi] = _row_block(names, lo, hi) @ qd

        if threads == 1:
            work(0)
        else:
            with ThreadPoolExecutor(threads) as pool:
                list(pool.map(work, range(threads)))
        return out

    def top_k(self, queries: Sequence[str], k: int, batch_size: int = 1024) -> tuple[np.ndarray, np.ndarray]:
        """The k best names per query: (scores [n, k] float32, row indices [n, k] int64), best first.

        Among the names returned, equal scores are ordered by row index (a tie straddling the k-th place is
        cut deterministically, not necessarily in favour of the lower row). When fewer than k names are
        indexed, k shrinks to that. Queries are scored in chunks of at most ``min(batch_size, 256)``: the
        [names, chunk] float32 score matrix (75 MB for 73K names) is the memory peak, and chunks of 128-256
        measured fastest on MEDIC (larger ones fall out of cache).
        """
        names = self._require_names()
        k = min(k, names.shape[0])
        n = len(queries)
        scores = np.zeros((n, k), dtype=np.float32)
        indices = np.zeros((n, k), dtype=np.int64)
        if n == 0 or k == 0:
            return scores, indices
        chunk = max(1, min(batch_size, _MAX_CHUNK))
        for start in range(0, n, chunk):
            batch = list(queries[start : start + chunk])
            by_name = self._scores_by_name(self.transform(batch))
            s, i = top_k_columns(by_name, k)
            scores[start : start + len(batch)] = s
            indices[start : start + len(batch)] = i
        return scores, indices

    def score(self, queries: Sequence[str], name_indices: np.ndarray) -> np.ndarray:
        """Sparse scores of given candidate rows: ``name_indices`` [n, m] -> scores [n, m] float32."""
        idx = np.asarray(name_indices, dtype=np.int64)
        if idx.ndim != 2 or idx.shape[0] != len(queries):
            raise ValueError(f"name_indices must be [n_queries, m], got {idx.shape} for {len(queries)} queries")
        n, m = idx.shape
        if n == 0 or m == 0:
            return np.zeros((n, m), dtype=np.float32)
        q = self.transform(queries)
        # One vectorised pass: the candidate rows times their query's row, summed per pair.
        if not self.keeps_matrix:
            cand = self._candidate_rows(idx.ravel())
        else:
            cand = self._require_names()[idx.ravel()]
        rep = q[np.repeat(np.arange(n), m)]
        dots = np.asarray(cand.multiply(rep).sum(axis=1), dtype=np.float32).ravel()
        return dots.reshape(n, m)

    def _candidate_rows(self, rows: np.ndarray) -> sp.csr_matrix:
        """tf-idf rows of the attached texts at ``rows`` (each distinct text transformed once)."""
        texts = self._texts
        assert texts is not None
        if len(rows) and (int(rows.min()) < 0 or int(rows.max()) >= len(texts)):
            raise ValueError(f"name rows out of range for {len(texts)} names")
        unique, inverse = np.unique(rows, return_inverse=True)
        return self.transform([texts[int(r)] for r in unique])[inverse.ravel()]

    # --- persistence -------------------------------------------------------------------------------

    def config(self) -> dict[str, Any]:
        return {
            "format_version": _FORMAT_VERSION,
            "ngram_range": list(self.ngram_range),
            "analyzer": self.analyzer,
            "n_features": len(self.vocabulary),
            "n_names": self.n_names,
            "names_from_texts": self._texts is not None,
        }

    def save(self, folder: str | Path) -> None:
        """``sparse_config.json``, ``sparse_vocabulary.json``, ``sparse_idf.npy``, ``sparse_names.npz`` (the matrix,
        when one is kept)."""
        path = Path(folder)
        path.mkdir(parents=True, exist_ok=True)
        with open(path / "sparse_config.json", "w", encoding="utf-8") as fh:
            json.dump(self.config(), fh, indent=2)
        with open(path / "sparse_vocabulary.json", "w", encoding="utf-8") as fh:
            json.dump(self.vocabulary, fh, ensure_ascii=False)
        np.save(path / "sparse_idf.npy", self.idf.astype(np.float32), allow_pickle=False)
        if self._names is not None:
            sp.save_npz(path / "sparse_names.npz", self._names, compressed=True)

    @classmethod
    def load(cls, folder: str | Path, texts: Sequence[str] | None = None) -> SparseEncoder:
        """``texts``: the name table's list, for an encoder saved without its matrix (``names_from_texts``)."""
        path = Path(folder)
        with open(path / "sparse_config.json", encoding="utf-8") as fh:
            cfg = json.load(fh)
        if cfg.get("format_version") != _FORMAT_VERSION:
            raise ValueError(f"{folder}: unsupported sparse encoder format {cfg.get('format_version')!r}")
        lo, hi = cfg["ngram_range"]
        enc = cls(ngram_range=(int(lo), int(hi)), analyzer=str(cfg["analyzer"]))
        with open(path / "sparse_vocabulary.json", encoding="utf-8") as fh:
            enc.vocabulary = {str(k): int(v) for k, v in json.load(fh).items()}
        enc.idf = np.load(path / "sparse_idf.npy", allow_pickle=False).astype(np.float32)
        if len(enc.idf) != len(enc.vocabulary):
            raise ValueError(f"{folder}: idf has {len(enc.idf)} entries for {len(enc.vocabulary)} n-grams")
        names_path = path / "sparse_names.npz"
        if cfg.get("names_from_texts"):
            if texts is None:
                raise ValueError(f"{folder}: saved without its name matrix; load it with the name table's texts")
            if len(texts) != int(cfg.get("n_names", len(texts))):
                raise ValueError(f"{folder}: {cfg.get('n_names')} names saved, {len(texts)} texts given")
            enc.attach_texts(texts)
        elif names_path.exists():
            enc._set_matrix(sp.load_npz(names_path).tocsr().astype(np.float32))
        return enc


def _row_block(matrix: sp.csr_matrix, lo: int, hi: int) -> sp.csr_matrix:
    """Rows ``lo:hi`` of a CSR matrix sharing its data and indices: ``matrix[lo:hi]`` copies them (for the whole
    matrix of MEDIC's 78K names, 2 of 4 ms a query). The arrays are set on an empty matrix because
    the constructor copies a view of less than half its array (scipy's ``_prune_array``)."""
    if lo == 0 and hi == matrix.shape[0]:
        return matrix
    start, end = int(matrix.indptr[lo]), int(matrix.indptr[hi])
    block = sp.csr_matrix((hi - lo, matrix.shape[1]), dtype=matrix.dtype)
    block.data = matrix.data[start:end]
    block.indices = matrix.indices[start:end]
    block.indptr = matrix.indptr[lo : hi + 1] - matrix.indptr.dtype.type(start)
    return block
