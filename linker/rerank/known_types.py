"""Known types of a dictionary's concepts, for the re-ranker's auxiliary classifier.

Where the dictionary states them for most concepts (MEDIC's SlimMappings, UMLS semantic types) they are
used as they are.
Where it has only a hierarchy (HPO, Disease Ontology), a concept's known types are the top branches it
descends from: the children of the root, or, when one child holds most of the dictionary (HPO's
"Phenotypic abnormality"), that child's children, and so on down.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from linker.data import ConceptRecord

__all__ = ["known_types_of", "top_branches"]

_DOMINANT = 0.8  # a branch holding this share of the concepts is descended into
# Stated types are used when most concepts have them; OBO "subset" tags on a few concepts are not types.
_STATED_COVERAGE = 0.9


def known_types_of(records: Iterable[ConceptRecord]) -> dict[str, tuple[str, ...]]:
    """concept id -> known types (stated ones where any concept has them, else top branches)."""
    recs = list(records)
    stated = {r.concept_id: tuple(r.known_types) for r in recs if r.known_types}
    if len(stated) >= _STATED_COVERAGE * len(recs):
        return stated
    parents = {r.concept_id: tuple(r.parents) for r in recs if r.parents}
    names = {r.concept_id: r.preferred_name for r in recs}
    return top_branches(parents, names) if parents else {}


def top_branches(parents: Mapping[str, tuple[str, ...]], names: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    ancestors: dict[str, frozenset[str]] = {}

    def ancestors_of(cid: str) -> frozenset[str]:
        # Iterative post-order walk (hierarchies are deep enough to exhaust Python's recursion).
        stack = [cid]
        while stack:
            node = stack[-1]
            if node in ancestors:
                stack.pop()
                continue
            pending = [p for p in parents.get(node, ()) if p not in ancestors and p != node]
            if pending and not any(p in stack for p in pending):
                stack.extend(pending)
                continue
            acc: set[str] = set()
            for p in parents.get(node, ()):
                if p != node:
                    acc.add(p)
                    acc |= ancestors.get(p, frozenset())
            ancestors[node] = frozenset(acc)
            stack.pop()
        return ancestors[cid]

    concepts = set(names) | set(parents)
    for cid in concepts:
        ancestors_of(cid)
    children: dict[str, set[str]] = {}
    for cid, ps in parents.items():
        for p in ps:
            children.setdefault(p, set()).add(cid)
    roots = [c for c in concepts if not parents.get(c)]
    level = {c for r in roots for c in children.get(r, ())}
    total = max(1, len(concepts))
    while level:
        sizes = {b: sum(1 for c in concepts if b in ancestors[c]) for b in level}
        dominant = [b for b, n in sizes.items() if n >= _DOMINANT * total]
        if not dominant:
            break
        level = (level - set(dominant)) | {c for b in dominant for c in children.get(b, ())}
    out: dict[str, tuple[str, ...]] = {}
    for cid in concepts:
        branches = sorted(names.get(b, b) for b in level if b in ancestors[cid] or b == cid)
        if branches:
            out[cid] = tuple(branches)
    return out
