"""Classes of names from one level of a hierarchy, and the two evaluations of Fivez et al. (BioNLP 2021,
"Scalable few-shot learning of robust biomedical name representations", sections 4.1-4.3).

Levels. The depth of a concept is the length of the shortest chain of parent links from the top; level 1
is the first depth that holds more than one concept. The top is the concept given as ``top`` (the paper
samples a high-level concept such as "disorder of abdomen" and takes its children as level 1), or else a
virtual root above every concept without parents, which slides down while it has a single child: CTD's
MEDIC (root "diseases"), HPO ("All") and DOID ("disease") each have one root, so their level 1 is the
root's children. A concept that no chain from the top reaches has no depth and takes no part.

The classes at level L >= 1: every concept deeper than L belongs to each of its ancestors at depth L (a
concept of a DAG may have several: the classes are mutually inclusive, as in the paper); the names of the
concepts at depth <= L are not training names (the paper keeps them only as the classes' hypernyms,
:func:`hypernyms`). Level 0 is each concept on its own: synonym sets, what name normalisation trains on.

Why the shortest chain: the paper first removes "shortcut" edges between non-consecutive levels, after
which every chain to a concept has one length; on a graph with shortcuts the shortest chain is what a
breadth-first walk gives in linear time, and a walk that marks what it has visited cannot loop on a cycle
of bad data. A concept's ancestors at depth L are found by walking down from each class concept, with a
visited set, so a cycle below the top ends too: the concepts on it are each other's ancestors, so each
belongs to the classes of all of them. A walk never climbs back above the level it is classing.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from linker.hierarchy.graph import HierarchySource

__all__ = ["LevelClasses", "concept_depths", "concept_classes", "level_classes", "hypernyms",
           "hold_out_per_class", "semantic_similarity_map", "hypernym_mrr"]

Encode = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class LevelClasses:
    """Distinct names and the classes of each (sorted concept ids; usually one, several in a DAG or for a
    name that two concepts share)."""

    names: tuple[str, ...]
    classes: tuple[tuple[str, ...], ...]
    level: int = 0
    members: dict[str, list[int]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if len(self.names) != len(self.classes):
            raise ValueError("LevelClasses needs one tuple of classes per name")
        members: dict[str, list[int]] = {}
        for i, classes in enumerate(self.classes):
            for c in classes:
                members.setdefault(c, []).append(i)
        object.__setattr__(self, "members", members)

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[str, str]], level: int = 0) -> LevelClasses:
        """(name, class) pairs, a name listed under several classes once with all of them."""
        by_name: dict[str, dict[str, None]] = {}
        for name, cid in pairs:
            if name and cid:
                by_name.setdefault(name, {})[cid] = None
        return cls(tuple(by_name), tuple(tuple(sorted(cs)) for cs in by_name.values()), level)

    def __len__(self) -> int:
        return len(self.names)

    def class_sizes(self) -> dict[str, float]:
        """How many classes, and names per class (the paper's Table 2)."""
        sizes = np.asarray([len(m) for m in self.members.values()] or [0])
        multi = sum(1 for cs in self.classes if len(cs) > 1)
        return {"classes": float(len(self.members)), "names": float(len(self.names)), "multi_class_names": float(multi),
                "min": float(sizes.min()), "max": float(sizes.max()), "mean": float(sizes.mean()),
                "stdev": float(sizes.std())}

    def subset(self, rows: Iterable[int]) -> LevelClasses:
        rows = list(rows)
        return LevelClasses(tuple(self.names[i] for i in rows), tuple(self.classes[i] for i in rows), self.level)


def _first_level(source: HierarchySource, top: str | None) -> tuple[list[str], set[str]]:
    """The concepts of level 1 (the walk down starts there) and those above it (never given a depth)."""
    if top is not None:
        if top not in source.names and top not in source.children:
            raise ValueError(f"{source.name}: no concept {top!r} to take as the top")
        return list(source.children.get(top, ())), {top}
    nodes = dict.fromkeys([*source.names, *source.children, *source.parents])
    level = [c for c in nodes if not source.parents.get(c)]
    if nodes and not level:
        raise ValueError(f"{source.name}: every concept has a parent (a cycle through the top?): name the top concept")
    above: set[str] = set()
    while len(level) == 1:  # a single root (or a chain below it) is no level: slide down
        below = [c for c in source.children.get(level[0], ()) if c not in above and c != level[0]]
        if not below:
            break
        above.add(level[0])
        level = below
    return level, above


def concept_depths(source: HierarchySource, top: str | None = None) -> dict[str, int]:
    """Level of each concept reachable from the top: 1 for the first level (see the module docstring),
    one more per parent link, the shortest chain winning. Breadth-first, so cycles end."""
    first, above = _first_level(source, top)
    depths: dict[str, int] = dict.fromkeys(first, 1)
    queue = deque(first)
    while queue:
        concept = queue.popleft()
        for child in source.children.get(concept, ()):
            if child not in depths and child not in above:
                depths[child] = depths[concept] + 1
                queue.append(child)
    return depths


def concept_classes(source: HierarchySource, level: int, top: str | None = None) -> dict[str, tuple[str, ...]]:
    """The classes of each concept at ``level``: for level 0 the concept itself (every named concept); for
    level L >= 1 its ancestors at depth L, for every concept deeper than L (the others are left out)."""
    if level < 0:
        raise ValueError("the level must be 0 (synonym sets) or more")
    if level == 0:
        return {c: (c,) for c in source.names}
    depths = concept_depths(source, top)
    classes: dict[str, set[str]] = {}
    for head in (c for c, d in depths.items() if d == level):
        seen = {head}
        queue = deque(source.children.get(head, ()))
        while queue:
            concept = queue.popleft()
            if concept in seen:
                continue
            seen.add(concept)
            if depths[concept] < level:  # a cycle back above the level is not followed
                continue
            if depths[concept] > level:  # a concept of the level below another is no training concept
                classes.setdefault(concept, set()).add(head)
            queue.extend(source.children.get(concept, ()))
    return {c: tuple(sorted(cs)) for c, cs in classes.items()}


def level_classes(source: HierarchySource, level: int, top: str | None = None) -> LevelClasses:
    """The training names of ``level`` with their classes (level 0: synonym sets)."""
    classes = concept_classes(source, level, top)
    pairs = ((name, cls) for concept, cs in classes.items() for name in source.names.get(concept, ())
             for cls in cs)
    return LevelClasses.from_pairs(pairs, level)


def hypernyms(source: HierarchySource, level: int, top: str | None = None) -> LevelClasses:
    """The names of the concepts at depth ``level`` (the classes themselves), each of its own class: the
    candidates of unsupervised hypernym detection (section 4.3). Never training names."""
    if level < 1:
        raise ValueError("hypernyms exist from level 1 down")
    depths = concept_depths(source, top)
    pairs = ((name, c) for c, d in depths.items() if d == level for name in source.names.get(c, ()))
    return LevelClasses.from_pairs(pairs, level)


def hold_out_per_class(
    data: LevelClasses, at_least: int = 0, at_most: int | None = None, seed: int = 13
) -> tuple[LevelClasses, LevelClasses]:
    """(training names, held-out names): one held-out name per class, the paper's protocol (section 4.2), in
    further rounds of one per class while fewer than ``at_least`` are held out, and no more than ``at_most``
    in all (classes are visited in a random order, so a cap samples classes). A class keeps at least one
    training name, so a class of one name gives none; a name of several classes counts for each."""
    rng = random.Random(seed)
    remaining = {c: len(rows) for c, rows in data.members.items()}
    order = {c: rng.sample(rows, len(rows)) for c, rows in data.members.items()}
    visit = sorted(order)
    rng.shuffle(visit)
    cap = len(data) if at_most is None else at_most
    held: dict[int, None] = {}
    while len(held) < cap:
        took = 0
        for c in visit:
            if len(held) >= cap:
                break
            rows = order[c]
            while rows and rows[-1] in held:
                rows.pop()
            if not rows or remaining[c] < 2:
                continue
            row = rows.pop()
            if any(remaining[k] < 2 for k in data.classes[row]):
                continue  # it would empty another of its classes
            held[row] = None
            for k in data.classes[row]:
                remaining[k] -= 1
            took += 1
        if not took or len(held) >= at_least:
            break
    train = [i for i in range(len(data)) if i not in held]
    return data.subset(train), data.subset(held)


def _shares_class(queries: Sequence[Sequence[str]], items: Sequence[Sequence[str]]) -> np.ndarray:
    """[q, n] bool: whether query i and item j have a class in common."""
    index: dict[str, list[int]] = {}
    for j, classes in enumerate(items):
        for c in classes:
            index.setdefault(c, []).append(j)
    out = np.zeros((len(queries), len(items)), dtype=bool)
    for i, classes in enumerate(queries):
        for c in classes:
            out[i, index.get(c, [])] = True
    return out


def _rankings(encode: Encode, queries: Sequence[str], items: Sequence[str], chunk: int) -> Iterable[tuple[int, np.ndarray]]:
    """(first query row, [c, n] item indices by descending cosine), ``chunk`` queries at a time."""
    q = np.asarray(encode(list(queries)), dtype=np.float32)
    v = np.asarray(encode(list(items)), dtype=np.float32)
    for start in range(0, len(q), chunk):
        scores = q[start:start + chunk] @ v.T  # [c, n]
        yield start, np.argsort(-scores, axis=1, kind="stable")


def semantic_similarity_map(
    encode: Encode, train_names: Sequence[str], train_classes: Sequence[Sequence[str]],
    test_names: Sequence[str], test_classes: Sequence[Sequence[str]], chunk: int = 256,
) -> float:
    """Semantic similarity ranking (section 4.3): every test name ranks all training names by cosine; the
    mean over test names of the average precision of retrieving the training names that share a class
    with it. A test name without any such training name is skipped (0.0 when none is left).
    ``encode`` maps names to L2-normalised vectors."""
    if not test_names or not train_names:
        return 0.0
    relevant = _shares_class(test_classes, train_classes)  # [q, n]
    total, counted = 0.0, 0
    for start, order in _rankings(encode, test_names, train_names, chunk):
        hits = np.take_along_axis(relevant[start:start + len(order)], order, axis=1)  # [c, n] in rank order
        ranks = np.arange(1, hits.shape[1] + 1)
        for row in hits:
            n_rel = int(row.sum())
            if n_rel:
                total += float((np.cumsum(row)[row] / ranks[row]).sum()) / n_rel
                counted += 1
    return total / counted if counted else 0.0


def hypernym_mrr(
    encode: Encode, test_names: Sequence[str], test_classes: Sequence[Sequence[str]],
    hypernym_names: Sequence[str], hypernym_classes: Sequence[Sequence[str]], chunk: int = 256,
) -> float:
    """Unsupervised hypernym detection (section 4.3): every test name ranks all hypernym names (the names of
    the level's class concepts, :func:`hypernyms`) by cosine; the mean reciprocal rank of the first one of
    its own class. Test names whose classes have no hypernym name are skipped."""
    if not test_names or not hypernym_names:
        return 0.0
    relevant = _shares_class(test_classes, hypernym_classes)
    total, counted = 0.0, 0
    for start, order in _rankings(encode, test_names, hypernym_names, chunk):
        hits = np.take_along_axis(relevant[start:start + len(order)], order, axis=1)
        for row in hits:
            if row.any():
                total += 1.0 / (int(np.argmax(row)) + 1)
                counted += 1
    return total / counted if counted else 0.0

