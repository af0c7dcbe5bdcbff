"""The kinds of dense index, their settings, and the faiss index each makes (:class:`linker.index.DenseIndex` holds
one, with the vectors and the name rows).

Kinds: ``flat`` (exact; the default and right up to a few hundred thousand names), ``hnsw`` (graph; no
training, fast for millions; ``hnsw_storage="sq8"`` keeps its vectors as int8, a quarter of the memory),
``ivf`` (inverted lists; trained on the vectors given to ``build``) and ``ivfpq`` (inverted lists of product-
quantised codes: ``pq_m`` bytes a name at 8 bits, for tens of millions of names).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Literal

import faiss
import numpy as np

__all__ = ["IndexConfig", "IndexKind", "KINDS", "AUTO_GRAPH_FROM", "pq_subquantisers", "new_faiss_index",
           "with_search_settings"]

IndexKind = Literal["auto", "flat", "hnsw", "ivf", "ivfpq", "pgvector"]
# pgvector: the vectors in a PostgreSQL table under pgvector's HNSW (linker.pgvector_index; the hnsw_* settings,
# halfvec unless vector_dtype is float32), searched by SQL; never "auto"'s choice (it needs a database).
KINDS = ("auto", "flat", "hnsw", "ivf", "ivfpq", "pgvector")
# ``auto`` below this many names is flat (exact search of a million 384-d vectors is ~1.5 GB and tens of ms a query
# on two cores); from it, an HNSW graph with a float16 copy (bench/scale.py measured it at 3 million names).
AUTO_GRAPH_FROM = 1_000_000
# PQ codebooks are k-means of 2**bits centroids: fewer training vectors than this make empty centroids.
_PQ_MIN_TRAIN_PER_CENTROID = 39


@dataclass(frozen=True)
class IndexConfig:
    kind: IndexKind = "auto"  # resolved by the number of names when the index is built (:meth:`resolved`)
    hnsw_m: int = 32
    hnsw_ef_search: int = 128
    hnsw_ef_construction: int = 80
    hnsw_storage: Literal["flat", "sq8"] = "flat"  # sq8: vectors as int8 in the graph (a quarter of the memory)
    ivf_nlist: int = 0  # 0: about 4 * sqrt(n) lists
    ivf_nprobe: int = 16
    pq_m: int = 0  # ivfpq: sub-quantisers (bytes a name at 8 bits); 0: dim / 8, or the largest divisor of dim below it
    pq_bits: int = 8
    refine: int = 4  # quantised kinds: candidates fetched per result, re-ranked exactly with the kept vectors
    # The kept copy (pair scores, refinement, save/load); auto: float16 from AUTO_GRAPH_FROM names, else float32.
    vector_dtype: Literal["auto", "float32", "float16"] = "auto"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown index kind {self.kind!r}; expected one of {', '.join(KINDS)}")
        if self.hnsw_storage not in ("flat", "sq8"):
            raise ValueError(f"hnsw_storage is flat or sq8, not {self.hnsw_storage!r}")
        if self.vector_dtype not in ("auto", "float32", "float16"):
            raise ValueError(f"vector_dtype is auto, float32 or float16, not {self.vector_dtype!r}")
        if not 1 <= self.pq_bits <= 16 or self.pq_m < 0 or self.refine < 1:
            raise ValueError("pq_bits must be 1..16, pq_m >= 0 and refine >= 1")

    def resolved(self, names: int) -> IndexConfig:
        """The concrete settings for ``names`` vectors: ``auto`` kind becomes flat, or HNSW from
        :data:`AUTO_GRAPH_FROM` names; ``auto`` vector dtype float32, or float16 from there. Explicit values stay."""
        large = names >= AUTO_GRAPH_FROM or self.kind == "pgvector"  # pgvector: halfvec unless float32 asked
        kind = ("hnsw" if large else "flat") if self.kind == "auto" else self.kind
        dtype = ("float16" if large else "float32") if self.vector_dtype == "auto" else self.vector_dtype
        return replace(self, kind=kind, vector_dtype=dtype)

    @property
    def quantised(self) -> bool:
        return self.kind == "ivfpq" or (self.kind == "hnsw" and self.hnsw_storage == "sq8")


def pq_subquantisers(dim: int, wanted: int = 0) -> int:
    """``wanted`` if it divides ``dim``, else the largest divisor of ``dim`` not above ``wanted`` (default dim / 8)."""
    target = wanted or max(1, dim // 8)
    return next(m for m in range(min(target, dim), 0, -1) if dim % m == 0)


def new_faiss_index(cfg: IndexConfig, dim: int, train: np.ndarray) -> faiss.Index:
    """The empty faiss index of ``cfg``'s kind (resolved: not ``auto``) for vectors of ``dim``, trained on ``train``
    where the kind needs training (ivf, ivfpq, hnsw with sq8)."""
    if cfg.kind == "flat":
        return faiss.IndexFlatIP(dim)
    if cfg.kind == "hnsw":
        hnsw: Any
        if cfg.hnsw_storage == "sq8":
            hnsw = faiss.IndexHNSWSQ(dim, faiss.ScalarQuantizer.QT_8bit, cfg.hnsw_m, faiss.METRIC_INNER_PRODUCT)  # type: ignore[arg-type]
            if len(train) == 0:
                raise ValueError("an hnsw index with sq8 storage needs vectors to train its quantiser on")
            hnsw.train(train)
        else:
            hnsw = faiss.IndexHNSWFlat(dim, cfg.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        hnsw.hnsw.efConstruction = cfg.hnsw_ef_construction
        hnsw.hnsw.efSearch = cfg.hnsw_ef_search
        return hnsw
    if cfg.kind == "ivf":
        n = len(train)
        nlist = cfg.ivf_nlist or max(1, min(n // 39, int(4 * math.sqrt(max(n, 1)))))
        quantizer = faiss.IndexFlatIP(dim)
        ivf = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
        if n == 0:
            raise ValueError("an ivf index needs vectors to train on")
        ivf.train(train)
        ivf.nprobe = min(cfg.ivf_nprobe, nlist)
        return ivf  # faiss's Python wrapper keeps a reference to the quantizer
    # ivfpq
    n = len(train)
    needed = _PQ_MIN_TRAIN_PER_CENTROID * (1 << cfg.pq_bits)
    if n < needed:
        raise ValueError(f"an ivfpq index with {cfg.pq_bits}-bit codes needs at least {needed:,} vectors to train on, "
                         f"got {n:,}: use flat or hnsw for a dictionary this small")
    nlist = cfg.ivf_nlist or max(1, min(n // 39, int(4 * math.sqrt(n))))
    quantizer = faiss.IndexFlatIP(dim)
    ivfpq = faiss.IndexIVFPQ(quantizer, dim, nlist, pq_subquantisers(dim, cfg.pq_m), cfg.pq_bits,
                             faiss.METRIC_INNER_PRODUCT)
    # k-means on every vector of millions costs minutes and gains nothing: a large sample trains as well.
    sample = train if n <= 256 * nlist else train[np.random.default_rng(0).choice(n, 256 * nlist, replace=False)]
    ivfpq.train(sample)
    ivfpq.nprobe = min(cfg.ivf_nprobe, nlist)
    return ivfpq


def with_search_settings(index: Any, cfg: IndexConfig) -> Any:
    """A faiss index read from disk, given ``cfg``'s search settings (faiss does not save efSearch and nprobe)."""
    if cfg.kind == "hnsw":
        index.hnsw.efSearch = cfg.hnsw_ef_search
    elif cfg.kind in ("ivf", "ivfpq"):
        index.nprobe = cfg.ivf_nprobe
    return index
