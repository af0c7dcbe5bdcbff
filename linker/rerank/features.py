"""The retriever's view of each candidate, as features of the ranking layer."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from linker.dictionary import NameTable
from linker.retrieval import Candidate
from linker.text import normalize

__all__ = ["retriever_features", "FEATURE_NAMES"]

FEATURE_NAMES = ("score", "dense", "sparse", "exact_name", "prior", "inverse_rank", "gap_to_top", "name_support")


def retriever_features(
    query: str, candidates: Sequence[Candidate], table: NameTable, prior: Mapping[str, float], dense_scale: float
) -> np.ndarray:
    """[C, len(FEATURE_NAMES)] for one query's candidates in retriever order (scores scaled to about 0..1)."""
    out = np.zeros((len(candidates), len(FEATURE_NAMES)), dtype=np.float32)
    if not candidates:
        return out
    scale = max(dense_scale, 1.0)
    top = float(candidates[0].score)
    for i, c in enumerate(candidates):
        row = table.row(c.name, c.concept_id)
        support = table.row_support[row] if row is not None else 0
        dense = 0.0 if math.isnan(c.dense) else float(c.dense)
        sparse = 0.0 if math.isnan(c.sparse) else float(c.sparse)
        out[i] = (
            float(c.score) / scale,
            dense,
            sparse,
            float(normalize(c.name, table.cfg) == query),
            float(prior.get(c.concept_id, 0.0)) / 5.0,
            1.0 / (i + 1),
            (float(c.score) - top) / scale,
            math.log1p(support) / 3.0,
        )
    return out
