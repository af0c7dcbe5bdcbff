"""A concept's place in its hierarchy: ancestors in one recursive query, and the paths from the roots to it.

Ontologies are DAGs (MEDIC and HPO concepts often have several parents), so the number of paths can grow
fast; the walk stops after ``limit`` paths and says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from django.db import connection

from webapp.vocab.models import Concept, HierarchyEdge

MAX_PATHS = 12

_ANCESTOR_EDGES_SQL = """
WITH RECURSIVE up(child_id, parent_id) AS (
    SELECT child_id, parent_id FROM {table} WHERE child_id = %s
    UNION
    SELECT e.child_id, e.parent_id FROM {table} e JOIN up ON e.child_id = up.parent_id
)
SELECT child_id, parent_id FROM up ORDER BY child_id, parent_id
"""


@dataclass(frozen=True)
class RootPaths:
    paths: list[list[Concept]]  # each from a root down to the concept itself
    truncated: bool  # more paths exist than are listed


def ancestor_parents(concept_pk: int) -> dict[int, list[int]]:
    """Parent pks of the concept and of each of its ancestors (UNION stops on cycles)."""
    parents: dict[int, list[int]] = {}
    with connection.cursor() as cursor:
        cursor.execute(_ANCESTOR_EDGES_SQL.format(table=HierarchyEdge._meta.db_table), [concept_pk])
        for child, parent in cursor.fetchall():
            parents.setdefault(child, []).append(parent)
    return parents


def paths_to_roots(start: int, parents: Mapping[int, Sequence[int]], limit: int = MAX_PATHS) -> tuple[list[list[int]], bool]:
    """Paths (root first, ``start`` last) through ``parents``, depth first in parent order, at most ``limit``.

    A node whose parents are all already on the path (a cycle in bad data) ends its path like a root.
    Returns the paths and whether the walk stopped at the limit.
    """
    paths: list[list[int]] = []
    truncated = False

    def walk(trail: list[int]) -> None:
        nonlocal truncated
        if len(paths) >= limit:
            truncated = True
            return
        up = [p for p in parents.get(trail[-1], ()) if p not in trail]
        if not up:
            paths.append(trail[::-1])
            return
        for parent in up:
            walk([*trail, parent])

    walk([start])
    return paths, truncated


def root_paths(concept: Concept, limit: int = MAX_PATHS) -> RootPaths:
    pk_paths, truncated = paths_to_roots(concept.pk, ancestor_parents(concept.pk), limit)
    if pk_paths == [[concept.pk]]:
        return RootPaths([], False)  # the concept is a root itself
    pks = {pk for path in pk_paths for pk in path}
    concepts = Concept.objects.select_related("version__dictionary").in_bulk(pks)
    paths = [[concepts[pk] for pk in path] for path in pk_paths]
    paths.sort(key=lambda path: (len(path), [c.preferred_name.lower() for c in path]))
    return RootPaths(paths, truncated)
