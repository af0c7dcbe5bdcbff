"""A concept's place in its hierarchy: ancestors in one recursive query, and the paths from the roots to it.

Ontologies are DAGs (MEDIC and HPO concepts often have several parents), so the number of paths can grow
fast; the walk stops after ``limit`` paths, and gives a path deeper than ``MAX_PATH_LENGTH`` levels from the
concept's nearest ancestors only, and says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from django.db import connection

from webapp.vocab.models import Concept, HierarchyEdge

MAX_PATHS = 12
# Levels shown of one path: MEDIC's deepest concept is 12 levels down, HPO's 16, GO's about 20; a longer path
# (a generated or damaged ontology: an is_a chain of 20,000 terms imports) is shown from its nearest ancestors.
MAX_PATH_LENGTH = 100

# Each step looks its edges up by index (LATERAL ... OFFSET 0 is not flattened into a join): as a plain join the
# planner hash-joins a sequential scan of every edge at each level (webapp.curation.lineage measured 50 ms vs 2).
_ANCESTOR_EDGES_SQL = """
WITH RECURSIVE up(child_id, parent_id) AS (
    SELECT child_id, parent_id FROM {table} WHERE child_id = %s
    UNION
    SELECT e.child_id, e.parent_id
    FROM up CROSS JOIN LATERAL (SELECT child_id, parent_id FROM {table} WHERE child_id = up.parent_id OFFSET 0) e
)
SELECT child_id, parent_id FROM up ORDER BY child_id, parent_id
"""


@dataclass(frozen=True)
class RootPaths:
    paths: list[list[Concept]]  # each from a root (or, cut, its farthest ancestor shown) down to the concept itself
    truncated: bool  # more paths exist than are listed
    cut: bool = False  # some path is longer than MAX_PATH_LENGTH: shown from the concept's nearest ancestors
    max_length: int = MAX_PATH_LENGTH


def ancestor_parents(concept_pk: int) -> dict[int, list[int]]:
    """Parent pks of the concept and of each of its ancestors (UNION stops on cycles)."""
    parents: dict[int, list[int]] = {}
    with connection.cursor() as cursor:
        cursor.execute(_ANCESTOR_EDGES_SQL.format(table=HierarchyEdge._meta.db_table), [concept_pk])
        for child, parent in cursor.fetchall():
            parents.setdefault(child, []).append(parent)
    return parents


class RootWalk(NamedTuple):
    paths: list[list[int]]  # root first (or the farthest ancestor kept, for a cut path), the start last
    truncated: bool  # more paths exist than ``limit``
    cut: bool  # some path was longer than ``max_length`` and is given from its nearest ancestors only


def paths_to_roots(
    start: int, parents: Mapping[int, Sequence[int]], limit: int = MAX_PATHS, max_length: int = MAX_PATH_LENGTH
) -> RootWalk:
    """Paths (root first, ``start`` last) through ``parents``, depth first in parent order, at most ``limit``.

    A node whose parents are all already on the path (a cycle in bad data) ends its path like a root. A path
    reaching ``max_length`` nodes ends there, cut. Iterative, with the path's nodes in a set: a chain of 20,000
    levels overflowed Python's stack when this walk recursed, and scanning the path for cycles made it quadratic.
    The work is bounded by ``limit`` times ``max_length`` whatever the hierarchy: every branch ends in a path.
    """
    paths: list[list[int]] = []
    truncated = cut = False
    trail = [start]
    on_trail = {start}

    def parents_to_walk(node: int) -> list[int]:
        """Parents not on the path yet, last first (so ``pop`` takes them in parent order)."""
        return [p for p in reversed(parents.get(node, ())) if p not in on_trail]

    first = parents_to_walk(start)
    if not first:
        return RootWalk([[start]], False, False)
    pending = [first]  # pending[i]: parents of trail[i] still to walk
    while pending:
        if not pending[-1]:
            pending.pop()
            on_trail.discard(trail.pop())
            continue
        if len(paths) >= limit:
            truncated = True
            break
        parent = pending[-1].pop()
        trail.append(parent)
        on_trail.add(parent)
        up = parents_to_walk(parent)
        if up and len(trail) < max_length:
            pending.append(up)
            continue
        cut = cut or bool(up)
        paths.append(trail[::-1])
        on_trail.discard(trail.pop())
    return RootWalk(paths, truncated, cut)


def root_paths(concept: Concept, limit: int = MAX_PATHS) -> RootPaths:
    pk_paths, truncated, cut = paths_to_roots(concept.pk, ancestor_parents(concept.pk), limit)
    if pk_paths == [[concept.pk]]:
        return RootPaths([], False)  # the concept is a root itself
    pks = {pk for path in pk_paths for pk in path}
    concepts = Concept.objects.select_related("version__dictionary").in_bulk(pks)
    paths = [[concepts[pk] for pk in path] for path in pk_paths]
    paths.sort(key=lambda path: (len(path), [c.preferred_name.lower() for c in path]))
    return RootPaths(paths, truncated, cut)


def hierarchy_cycles(edges: Iterable[tuple[int, int]]) -> list[list[int]]:
    """One cycle for each group of nodes that are each other's ancestors, over (child, parent) edges.

    Each cycle is a walk child -> parent -> ... back to its first node, the group's smallest node first and
    the shortest way round from it. Strongly connected components by Tarjan's algorithm, without recursion
    (a chain of 20,000 terms would overflow Python's stack), so linear in the edges: HPO's 23K take ~20 ms.
    """
    graph: dict[int, list[int]] = {}
    for child, parent in edges:
        graph.setdefault(child, []).append(parent)
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on_stack: set[int] = set()
    groups: list[list[int]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, 0)]  # (node, how many of its parents were looked at)
        while work:
            node, done = work.pop()
            if done == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            parents = graph.get(node, [])
            while done < len(parents):
                parent = parents[done]
                done += 1
                if parent not in index:
                    work.append((node, done))  # come back to the rest of node's parents after this one
                    work.append((parent, 0))
                    break
                if parent in on_stack:
                    low[node] = min(low[node], index[parent])
            else:
                if low[node] == index[node]:  # node roots a component: pop it off the stack
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(group)
                if work:
                    caller = work[-1][0]
                    low[caller] = min(low[caller], low[node])
    return [_cycle_through(graph, set(group)) for group in groups]


def _cycle_through(graph: Mapping[int, Sequence[int]], members: set[int]) -> list[int]:
    """The shortest walk from the group's smallest node back to itself, staying inside the group."""
    start = min(members)
    came_from: dict[int, int] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for parent in graph.get(node, ()):
                if parent == start:
                    walk = [node]
                    while walk[-1] != start:
                        walk.append(came_from[walk[-1]])
                    return [*reversed(walk), start]
                if parent in members and parent not in came_from:
                    came_from[parent] = node
                    following.append(parent)
        frontier = following
    return [start]  # unreachable for a strongly connected group
