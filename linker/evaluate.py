"""Evaluation metrics. Evaluators return ``dict[str, float]``; the primary metric is :data:`PRIMARY_METRIC`.

Linking follows BioSyn (Sung et al., 2020): Acc@k is 1 when a correct concept is in the top k, and a
composite mention counts as correct only when every one of its parts is correct.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "PRIMARY_METRIC",
    "MentionOutcome",
    "mention_rank",
    "mention_outcomes",
    "evaluate_linking",
    "mcnemar_p",
    "mean_average_precision",
    "spearman",
    "roc_auc",
]

PRIMARY_METRIC = "acc@1"


def mention_rank(gold_parts: Sequence[frozenset[str]], ranked_parts: Sequence[Sequence[str]]) -> float:
    """1-based rank at which a mention becomes correct (the worst of its parts' ranks); inf if never.

    A part's rank is the position of the first candidate in its gold set; the mention is correct at k iff
    every part's rank is <= k, i.e. iff the maximum part rank is <= k.
    """
    if len(gold_parts) != len(ranked_parts):
        raise ValueError(f"{len(gold_parts)} gold parts but {len(ranked_parts)} ranked lists")
    if not gold_parts:
        raise ValueError("a mention needs at least one part")
    worst = 0.0
    for gold, ranked in zip(gold_parts, ranked_parts, strict=True):
        rank = math.inf
        for pos, cid in enumerate(ranked, start=1):
            if cid in gold:
                rank = float(pos)
                break
        worst = max(worst, rank)
    return worst


@dataclass(frozen=True)
class MentionOutcome:
    """What a linker did with one mention: its first candidate per part, and the rank at which every part is right
    (None: some part's gold is not in its ranked list)."""

    top1: tuple[str | None, ...]
    rank: int | None

    @property
    def correct(self) -> bool:
        return self.rank == 1


def mention_outcomes(
    gold: Sequence[Sequence[frozenset[str]]], ranked: Sequence[Sequence[Sequence[str]]]
) -> list[MentionOutcome]:
    """Per mention, what :func:`evaluate_linking` counts: the same ranks (:func:`mention_rank`), plus each part's
    top-1 so that two linkers can be compared mention by mention."""
    if len(gold) != len(ranked):
        raise ValueError(f"{len(gold)} gold mentions but {len(ranked)} ranked mentions")
    out = []
    for g, r in zip(gold, ranked, strict=True):
        rank = mention_rank(g, r)
        out.append(MentionOutcome(tuple(part[0] if part else None for part in r), int(rank) if math.isfinite(rank) else None))
    return out


def evaluate_linking(
    gold: Sequence[Sequence[frozenset[str]]],
    ranked: Sequence[Sequence[Sequence[str]]],
    mention_types: Sequence[str] | None = None,
    ks: Sequence[int] = (1, 5),
) -> dict[str, float]:
    """Acc@k for each k, MRR and n, overall and per mention type ("acc@1/SpecificDisease", ...).

    ``gold[i]`` lists the parts of mention i, each part a set of acceptable concept ids; ``ranked[i][p]``
    is the ranked concept-id list for part p. A composite's reciprocal rank is the minimum over its parts.
    """
    if len(gold) != len(ranked):
        raise ValueError(f"{len(gold)} gold mentions but {len(ranked)} ranked mentions")
    if mention_types is not None and len(mention_types) != len(gold):
        raise ValueError(f"{len(mention_types)} mention types for {len(gold)} mentions")
    ranks = np.array([mention_rank(g, r) for g, r in zip(gold, ranked, strict=True)], dtype=np.float64)
    groups: dict[str, list[int]] = defaultdict(list)
    if mention_types is not None:
        for i, t in enumerate(mention_types):
            groups[t].append(i)

    def summary(r: np.ndarray, suffix: str) -> dict[str, float]:
        out: dict[str, float] = {}
        n = len(r)
        for k in ks:
            out[f"acc@{k}{suffix}"] = float(np.mean(r <= k)) if n else 0.0
        out[f"mrr{suffix}"] = float(np.mean(np.where(np.isfinite(r), 1.0 / r, 0.0))) if n else 0.0
        out[f"n{suffix}"] = float(n)
        return out

    result = summary(ranks, "")
    for t in sorted(groups):
        result.update(summary(ranks[groups[t]], f"/{t}"))
    return result


# Below this many discordant pairs the exact binomial test is used: the chi-square approximation is poor for small
# b + c (the usual rule of thumb is 25, e.g. Agresti, Categorical Data Analysis, 10.1.4).
MCNEMAR_EXACT_BELOW = 25


def mcnemar_p(b: int, c: int, exact_below: int = MCNEMAR_EXACT_BELOW) -> float:
    """Two-sided p-value of McNemar's test that two systems err equally often on the same items.

    Only the discordant pairs count: ``b`` items the first system got right and the second wrong, ``c`` the other
    way round. Under the null hypothesis each discordant item is a fair coin, b ~ Binomial(b + c, 1/2). When
    ``b + c < exact_below`` the exact test is used: p = min(1, 2 * P(X <= min(b, c))); otherwise the chi-square
    statistic with Edwards' continuity correction, (|b - c| - 1)^2 / (b + c) on one degree of freedom, whose
    upper tail is erfc(sqrt(x / 2)). No discordant pair: p = 1 (no evidence of a difference).
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be non-negative, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    if n < exact_below:
        tail = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2.0**n
        return min(1.0, 2.0 * tail)
    statistic = (abs(b - c) - 1.0) ** 2 / n if abs(b - c) >= 1 else 0.0
    return math.erfc(math.sqrt(statistic / 2.0))


def mean_average_precision(
    relevance: Sequence[Sequence[bool]], n_relevant: Sequence[int] | None = None
) -> float:
    """Mean over queries of average precision of a ranked relevance list.

    ``relevance[q]`` marks which ranked items of query q are relevant; ``n_relevant[q]`` is the number of
    relevant items that exist (defaults to those retrieved, i.e. AP over the retrieved list). Queries with
    no relevant item contribute 0.
    """
    if not relevance:
        return 0.0
    aps: list[float] = []
    for q, rel in enumerate(relevance):
        hits = 0
        total = 0.0
        for pos, r in enumerate(rel, start=1):
            if r:
                hits += 1
                total += hits / pos
        denom = n_relevant[q] if n_relevant is not None else hits
        aps.append(total / denom if denom else 0.0)
    return float(np.mean(aps))


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation (ties averaged); nan when either side is constant or n < 2."""
    if len(x) != len(y):
        raise ValueError(f"{len(x)} values against {len(y)}")
    if len(x) < 2:
        return float("nan")
    xa, ya = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if np.all(xa == xa[0]) or np.all(ya == ya[0]):
        return float("nan")
    # scipy.stats is imported where a correlation is asked for, not with this module (issue #45: light imports)
    from scipy.stats import spearmanr

    rho = spearmanr(xa, ya).statistic
    return float(rho)


def roc_auc(labels: Sequence[int | bool], scores: Sequence[float]) -> float:
    """Area under the ROC curve (Mann-Whitney U with tied scores counted half); nan without both classes."""
    if len(labels) != len(scores):
        raise ValueError(f"{len(labels)} labels against {len(scores)} scores")
    y = np.asarray(labels, dtype=bool)
    s = np.asarray(scores, dtype=np.float64)
    n_pos = int(y.sum())
    n_neg = len(y) - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    from scipy.stats import rankdata

    ranks = rankdata(s)
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))
