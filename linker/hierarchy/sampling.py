"""Batches for hierarchy pre-training: every distance present in every batch, sources mixed across batches.

HiPrBERT (section 3.4) "leverages the structure of the tree to construct minibatches". Here a batch is built
from groups around anchor concepts of one source: for an anchor, two of its names (a synonym pair, distance
0), names of two of its siblings (1), of a parent and of a child (2); the other groups of the
batch are mostly unrelated (3), and any two names of a batch get their true distance from the hierarchy, so
a sibling pair across groups counts as one. A synonyms-only source (corpus mentions) gives synonym pairs.

Each batch comes from one source (names of two dictionaries cannot be compared); the batches of all
sources are shuffled together, so an epoch mixes dictionaries in proportion to their size.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from linker.hierarchy.graph import HierarchySource

__all__ = ["Term", "Batch", "anchor_group", "epoch_batches"]


@dataclass(frozen=True)
class Term:
    text: str
    concept: str


@dataclass(frozen=True)
class Batch:
    source: int  # index into the sources
    terms: tuple[Term, ...]


def anchor_group(source: HierarchySource, anchor: str, rng: random.Random) -> list[Term]:
    """The anchor's terms: up to two of its names, two siblings' names, a parent's and a child's name.

    Two siblings and both a parent and a child, rather than one relative of each kind, double the sibling and
    parent-child pairs a batch holds: with one of each, the (1, 2) threshold, which orders siblings before
    parent-child pairs, had about a hundred of each among eight thousand pairs and barely moved (bench/RESULTS.md)."""
    names = source.names.get(anchor) or []
    group = [Term(n, anchor) for n in (rng.sample(names, 2) if len(names) >= 2 else names[:1])]
    siblings = [c for c in source.siblings(anchor) if source.names.get(c)]
    parents = [c for c in source.parents.get(anchor, ()) if source.names.get(c)]
    children = [c for c in source.children.get(anchor, ()) if source.names.get(c)]
    chosen = rng.sample(siblings, min(2, len(siblings)))
    chosen += [rng.choice(related) for related in (parents, children) if related]
    group += [Term(rng.choice(source.names[c]), c) for c in chosen]
    return group


def _useful_anchor(source: HierarchySource, concept: str) -> bool:
    if len(source.names.get(concept) or ()) >= 2:
        return True
    return source.hierarchical and bool(source.parents.get(concept) or source.children.get(concept))


def _source_batches(index: int, source: HierarchySource, batch_size: int, rng: random.Random) -> list[Batch]:
    anchors = [c for c in source.names if _useful_anchor(source, c)]
    rng.shuffle(anchors)
    batches: list[Batch] = []
    current: dict[Term, None] = {}
    for anchor in anchors:
        for term in anchor_group(source, anchor, rng):
            current.setdefault(term, None)
        if len(current) >= batch_size:
            terms = list(current)
            batches.append(Batch(index, tuple(terms[:batch_size])))
            current = dict.fromkeys(terms[batch_size:])
    if len(current) >= max(2, batch_size // 2):  # a short last batch still has enough pairs to learn from
        batches.append(Batch(index, tuple(current)))
    return batches


def epoch_batches(
    sources: Sequence[HierarchySource], batch_size: int, seed: int, max_batches: int = 0
) -> list[Batch]:
    """One epoch's batches over every source, shuffled together; at most ``max_batches`` (0: all), a random
    subset that keeps the sources' proportions."""
    rng = random.Random(seed)
    batches = [b for i, s in enumerate(sources) for b in _source_batches(i, s, batch_size, rng)]
    rng.shuffle(batches)
    return batches[:max_batches] if max_batches > 0 else batches
