"""Where candidate concepts sit in the hierarchy: their shortest path from a root, their parents and siblings.

Read only; one recursive query for the paths (and the parents) of all of a panel's candidates, and none for a
candidate whose ancestry this process has read before: a release's hierarchy never changes once imported (a new
release has new concept rows), so each concept's ancestor edges are kept in a bounded per-process cache. (No signal
clears it: a receiver on HierarchyEdge's delete would make deleting a UMLS-size release load millions of edges.)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from django.db import connection

from webapp.vocab.hierarchy import paths_to_roots
from webapp.vocab.models import Concept, HierarchyEdge

MAX_SIBLINGS = 15
# Ancestor edges kept, all concepts together: ~50,000 concepts of a MEDIC-size hierarchy (~10 ancestors each, a
# few MB). Counted in edges, not concepts: a concept 20,000 levels deep in a long chain holds 20,000 of its own.
ANCESTRY_CACHE_EDGES = 500_000

Edge = tuple[int, int, int, str, str]  # child pk, parent pk, parent's version, concept id and preferred name


class _AncestryCache:
    """Concept pk -> the edges of its whole ancestry (LRU over at most ``max_edges`` edges in all; shared by a
    process's request threads)."""

    def __init__(self, max_edges: int) -> None:
        self.max_edges = max_edges
        self._edges: OrderedDict[int, tuple[Edge, ...]] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()

    def get(self, pk: int) -> tuple[Edge, ...] | None:
        with self._lock:
            edges = self._edges.get(pk)
            if edges is not None:
                self._edges.move_to_end(pk)
            return edges

    def put(self, pk: int, edges: tuple[Edge, ...]) -> None:
        if len(edges) > self.max_edges:
            return  # larger than the whole cache: read again when asked
        with self._lock:
            previous = self._edges.pop(pk, None)
            self._held += len(edges) - (len(previous) if previous is not None else 0)
            self._edges[pk] = edges
            while self._held > self.max_edges:
                _, evicted = self._edges.popitem(last=False)
                self._held -= len(evicted)

    def clear(self) -> None:
        with self._lock:
            self._edges.clear()
            self._held = 0


ANCESTRY = _AncestryCache(ANCESTRY_CACHE_EDGES)


def _ancestry(pks: list[int]) -> list[Edge]:
    """The ancestor edges of every concept of ``pks``: cached ones from memory, the others in one query."""
    edges: list[Edge] = []
    missing = []
    for pk in dict.fromkeys(pks):
        cached = ANCESTRY.get(pk)
        if cached is None:
            missing.append(pk)
        else:
            edges.extend(cached)
    if missing:
        with connection.cursor() as cursor:
            cursor.execute(_ANCESTORS_OF_MANY_SQL.format(edge=HierarchyEdge._meta.db_table, concept=Concept._meta.db_table), [missing])
            rows: list[Edge] = [tuple(row) for row in cursor.fetchall()]  # type: ignore[misc]
        edges.extend(rows)
        parents: dict[int, list[Edge]] = {}
        for row in rows:
            parents.setdefault(row[0], []).append(row)
        for pk in missing:  # each missing concept's own closure, walked up the edges just read
            closure: list[Edge] = []
            seen: set[int] = set()
            stack = [pk]
            while stack:
                child = stack.pop()
                if child in seen:
                    continue
                seen.add(child)
                for row in parents.get(child, ()):
                    closure.append(row)
                    stack.append(row[1])
            ANCESTRY.put(pk, tuple(closure))
    return edges


# Each step looks its edges up by index (LATERAL ... OFFSET 0 keeps the planner from flattening it into a join):
# planned as a plain join, the recursive step hash-joined a sequential scan of every edge of every dictionary
# at each level and the names came from a scan of every concept, 50 ms per first panel at MEDIC size instead of 2.
_ANCESTORS_OF_MANY_SQL = """
WITH RECURSIVE up(child_id, parent_id) AS (
    SELECT child_id, parent_id FROM {edge} WHERE child_id = ANY(%s)
    UNION
    SELECT e.child_id, e.parent_id
    FROM up CROSS JOIN LATERAL (SELECT child_id, parent_id FROM {edge} WHERE child_id = up.parent_id OFFSET 0) e
)
SELECT up.child_id, up.parent_id, c.version_id, c.concept_id, c.preferred_name
FROM up CROSS JOIN LATERAL (SELECT version_id, concept_id, preferred_name FROM {concept} WHERE id = up.parent_id OFFSET 0) c
ORDER BY up.child_id, up.parent_id
"""


@dataclass(frozen=True)
class Lineage:
    """The ancestry of a panel's candidates, from one query."""

    paths: dict[int, tuple[list[Concept], int]]  # per candidate: its shortest path from a root, how many others
    parents: dict[int, list[int]]  # parent pks of every candidate and of every ancestor (each candidate's are complete)
    nodes: dict[int, Concept]  # every ancestor: id, concept id and preferred name only
    cut: frozenset[int] = frozenset()  # candidates whose path is too deep to give whole: from their nearest ancestors

    def name(self, pk: int) -> str:
        node = self.nodes.get(pk)
        return node.preferred_name if node is not None else str(pk)


def candidate_lineage(pks: list[int], limit: int = 8) -> Lineage:
    """Per concept: its shortest path from a root (root first) and how many other paths exist (up to ``limit``).

    One recursive query for all candidates' ancestors, their names included, whatever the number of candidates.
    Path nodes are unsaved-looking Concept instances with id, concept id and preferred name only. The parent
    map comes with it: the near-miss labels (:mod:`webapp.curation.near_miss`) read the candidates' direct
    parents from it, so they cost the panel no query of their own.
    """
    if not pks:
        return Lineage({}, {}, {})
    parents: dict[int, list[int]] = {}
    nodes: dict[int, Concept] = {}
    for child, parent, version_id, cid, name in sorted(set(_ancestry(pks))):
        parents.setdefault(child, []).append(parent)
        nodes[parent] = Concept(pk=parent, version_id=version_id, concept_id=cid, preferred_name=name)
    out: dict[int, tuple[list[Concept], int]] = {}
    cut: set[int] = set()
    for pk in pks:
        pk_paths, _, some_cut = paths_to_roots(pk, parents, limit)
        pk_paths.sort(key=len)
        if not pk_paths or len(pk_paths[0]) < 2:
            out[pk] = ([], 0)
            continue
        out[pk] = ([nodes[p] for p in pk_paths[0][:-1]], len(pk_paths) - 1)
        if some_cut and _goes_on(pk_paths[0], parents):  # the path shown is a cut one
            cut.add(pk)
    return Lineage(out, parents, nodes, frozenset(cut))


def _goes_on(path: list[int], parents: dict[int, list[int]]) -> bool:
    """The path's first node has a parent off the path: the walk cut it, it does not start at a root."""
    on_path = set(path)
    return any(p not in on_path for p in parents.get(path[0], ()))


@dataclass(frozen=True)
class Family:
    concept: Concept
    parents: list[tuple[Concept, list[Concept], bool]]  # parent, its other children (siblings), more siblings exist
    children: list[Concept]
    more_children: bool


def family(concept: Concept) -> Family:
    """Parents of a concept with their other children (the concept's siblings), and its own children."""
    parent_ids = list(HierarchyEdge.objects.filter(child=concept).values_list("parent_id", flat=True))
    concepts = Concept.objects.select_related("version__dictionary")
    parents = concepts.in_bulk(parent_ids)
    out = []
    for pid in parent_ids:
        siblings = list(
            concepts.filter(parent_edges__parent_id=pid).exclude(pk=concept.pk).order_by("preferred_name").distinct()[: MAX_SIBLINGS + 1]
        )
        out.append((parents[pid], siblings[:MAX_SIBLINGS], len(siblings) > MAX_SIBLINGS))
    out.sort(key=lambda p: p[0].preferred_name.lower())
    children = list(concepts.filter(parent_edges__parent=concept).order_by("preferred_name").distinct()[: MAX_SIBLINGS + 1])
    return Family(concept, out, children[:MAX_SIBLINGS], len(children) > MAX_SIBLINGS)
