"""The HiPrBERT evaluation (section 4.2): held-out pairs at each distance, ROC AUC and Spearman per pair of
distances.

For concepts held out of training, pairs are drawn at every distance: two of its names (0), a name of it
and of a sibling (1), of its parent or a child (2), of an unrelated concept of the same source (3). The
cosine of two names should order them: for each pair of distances (i, j), i < j, the ROC AUC of telling
distance-i pairs from distance-j pairs by cosine, and Spearman's correlation of cosine with -distance over
those pairs (the paper's Tables 3 and 4).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from itertools import combinations

import numpy as np

from linker.evaluate import roc_auc, spearman
from linker.hierarchy.graph import OTHER, PARENT_CHILD, SIBLING, SYNONYM, HierarchySource

__all__ = ["DISTANCE_PAIRS", "held_out_pairs", "hierarchy_scores"]

DISTANCE_PAIRS: tuple[tuple[int, int], ...] = tuple(combinations((SYNONYM, SIBLING, PARENT_CHILD, OTHER), 2))
Encode = Callable[[Sequence[str]], np.ndarray]


def held_out_pairs(
    source: HierarchySource, concepts: Sequence[str], per_distance: int = 1000, seed: int = 13
) -> list[tuple[str, str, int]]:
    """(name, name, distance) pairs anchored on ``concepts``, at most ``per_distance`` of each distance.
    The partner of a distance-3 pair is any named concept of the source at distance 3 from the anchor."""
    rng = random.Random(seed)
    named = [c for c in source.names if source.names[c]]
    found: dict[int, list[tuple[str, str, int]]] = {d: [] for d in (SYNONYM, SIBLING, PARENT_CHILD, OTHER)}
    anchors = [c for c in concepts if source.names.get(c)]
    rng.shuffle(anchors)
    for anchor in anchors:
        names = source.names[anchor]
        if len(names) >= 2:
            a, b = rng.sample(names, 2)
            found[SYNONYM].append((a, b, SYNONYM))
        for distance, related in ((SIBLING, source.siblings(anchor)), (PARENT_CHILD, source.relatives(anchor))):
            related = [c for c in related if source.names.get(c) and source.distance(anchor, c) == distance]
            if related:
                other = rng.choice(related)
                found[distance].append((rng.choice(names), rng.choice(source.names[other]), distance))
        for _ in range(5):  # an unrelated concept: almost any random one
            other = rng.choice(named)
            if source.distance(anchor, other) == OTHER:
                found[OTHER].append((rng.choice(names), rng.choice(source.names[other]), OTHER))
                break
        if all(len(v) >= per_distance for v in found.values()):
            break
    return [p for d in sorted(found) for p in found[d][:per_distance]]


def hierarchy_scores(encode: Encode, pairs: Sequence[tuple[str, str, int]]) -> dict[str, float]:
    """``auc_i_j`` and ``spearman_i_j`` per distance pair, ``spearman`` over all pairs, ``pairs_d`` counts;
    ``encode`` maps texts to L2-normalised vectors [n, h]."""
    if not pairs:
        return {}
    texts = list(dict.fromkeys(t for a, b, _ in pairs for t in (a, b)))
    row = {t: i for i, t in enumerate(texts)}
    vectors = np.asarray(encode(texts), dtype=np.float32)
    left = vectors[[row[a] for a, _, _ in pairs]]
    right = vectors[[row[b] for _, b, _ in pairs]]
    cosine = (left * right).sum(axis=1)
    distance = np.asarray([d for _, _, d in pairs])
    out: dict[str, float] = {f"pairs_{d}": float((distance == d).sum()) for d in (SYNONYM, SIBLING, PARENT_CHILD, OTHER)}
    for i, j in DISTANCE_PAIRS:
        keep = (distance == i) | (distance == j)
        out[f"auc_{i}_{j}"] = roc_auc((distance[keep] == i).tolist(), cosine[keep].tolist())
        out[f"spearman_{i}_{j}"] = spearman(cosine[keep].tolist(), (-distance[keep]).tolist())
    out["spearman"] = spearman(cosine.tolist(), (-distance).tolist())
    return out
