"""A project's concept filter: the concepts its candidate panel, concept search and decisions may name.

A project (:class:`webapp.projects.models.Project`) may restrict its curation to concepts with one of its known
types (``concept_types``) and/or in the subtree of one of its roots (``concept_roots``, the roots included).
When both are given a concept must pass both, the intersection: "Neoplasm-typed concepts under Neoplasms by
Site" is what a project naming both means, where the union would let either half widen the other. Both empty:
no filter.

The allowed set is computed in the dictionary's current release, :meth:`Dictionary.latest_version` (what
imports, training and the API call current), and kept as concept ids as well as primary keys: the panel ranks
with the active index's release, which may be an older one, and the id is what a concept keeps from one
release to the next. So the callers that meet concepts of any release ask :meth:`ConceptFilter.allows_id`.

The panel asks on every mention, so the set is computed once per process for each (release, types, roots)
(:func:`_allowed`, one recursive query): changing a project's types or roots, or importing a new release,
makes a new key; releases are never edited in place.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection

from webapp.corpus.models import Collection, Document
from webapp.projects.access import projects_covering
from webapp.projects.models import Project
from webapp.vocab.models import Concept, Dictionary, HierarchyEdge, KnownType

logger = logging.getLogger(__name__)

CACHED_FILTERS = 64  # (release, types, roots) combinations kept per process: a handful of projects each


@dataclass(frozen=True)
class ConceptFilter:
    project_title: str
    type_labels: tuple[str, ...]
    root_ids: tuple[str, ...]
    concept_pks: frozenset[int]  # the allowed concepts of the dictionary's current release
    concept_ids: frozenset[str] = frozenset()  # the same concepts by id: what stays the same across releases
    root_names: tuple[str, ...] = ()  # aligned with root_ids ("" for a root the current release lacks)
    dictionary_title: str = ""

    def allows(self, concept_pk: int) -> bool:
        """Whether a concept of the current release passes (see :meth:`allows_id` for other releases)."""
        return concept_pk in self.concept_pks

    def allows_id(self, concept_id: str) -> bool:
        """Whether the concept of this id passes, in whichever release of the dictionary it is met."""
        return concept_id in self.concept_ids

    def describe(self) -> str:
        """The filter in words, e.g. "known type Disease; under MESH:D009369 Neoplasms" (both must hold)."""
        parts = []
        if self.type_labels:
            parts.append(f"known type {' or '.join(self.type_labels)}")
        if self.root_ids:
            roots = [f"{cid} {name}" if name else f"{cid} (not in the current release)"
                     for cid, name in zip(self.root_ids, self.root_names or ("",) * len(self.root_ids), strict=True)]
            parts.append(f"under {' or '.join(roots)}")
        return "; ".join(parts)

    def refusal(self, concept_id: str, preferred_name: str = "") -> str:
        """Why a decision may not name this concept, in words for the curator."""
        named = f"{concept_id} {preferred_name}".strip()
        project = f" of project “{self.project_title}”" if self.project_title else ""
        return f"{named} is outside the concept filter{project} ({self.describe()}): choose a concept it allows"


@dataclass(frozen=True)
class _Allowed:
    """What :func:`_allowed` computed for one (release, types, roots): cached, so immutable."""

    pks: frozenset[int]
    ids: frozenset[str]
    type_labels: tuple[str, ...]  # in the order of the type pks asked for
    unknown_types: tuple[int, ...]
    root_names: tuple[str, ...]  # aligned with the roots asked for; "" where the release lacks one
    missing_roots: tuple[str, ...]


def build_filter(dictionary: Dictionary, type_pks: Sequence[int], root_ids: Sequence[str], project_title: str = "") -> ConceptFilter | None:
    """The filter of these known types and roots in the dictionary's current release; None when both are empty.

    Raises ValueError naming the problem when a known type or a root is unknown to the current release, or
    when the filter matches no concept at all (a type none of the roots' subtrees carries).
    """
    return _build(dictionary, type_pks, root_ids, project_title, strict=True)


def filter_for_project(project: Project) -> ConceptFilter | None:
    """The project's filter, None without one (or without a dictionary to filter).

    Unlike :func:`build_filter` it does not raise for a root a newer release dropped: curation goes on with the
    other roots, and the panel's line names the missing one, so the manager sees what to fix.
    """
    type_pks = sorted(t.pk for t in project.concept_types.all())  # prefetched by filter_for_collection
    if not type_pks and not project.concept_roots:
        return None
    dictionary = project.collection.dictionary
    if dictionary is None:
        return None
    return _build(dictionary, type_pks, project.concept_roots, project.title or project.slug, strict=False)


def filter_for_collection(collection: Collection) -> ConceptFilter | None:
    """The filter that applies to the mentions of this collection.

    A workspace (an annotator's copies) has its project's filter; a project's own collection (the adjudicated
    documents) has the filter of the project that uses it, or, used by several, their filter when they all
    have the same one, else none (no project's filter may narrow another's decisions). A project over some
    documents of the collection narrows only those: :func:`filter_for_document`.
    """
    related = Project.objects.select_related("collection__dictionary").prefetch_related("concept_types")
    if collection.is_workspace:
        project = related.filter(workspaces__collection=collection).first()
        return filter_for_project(project) if project is not None else None
    return _common_filter(list(related.filter(collection=collection)))


def filter_for_document(document: Document) -> ConceptFilter | None:
    """The filter that applies to the mentions of this document: that of the projects covering it (a project
    restricts what it covers: one over some documents of a collection leaves the others unfiltered)."""
    if document.collection.is_workspace:
        return filter_for_collection(document.collection)
    covering = [p.pk for p in projects_covering(document)]
    related = Project.objects.select_related("collection__dictionary").prefetch_related("concept_types")
    return _common_filter(list(related.filter(pk__in=covering).order_by("slug")))


def _common_filter(projects: list[Project]) -> ConceptFilter | None:
    if not projects:
        return None
    filters = {(frozenset(t.pk for t in p.concept_types.all()), frozenset(p.concept_roots)) for p in projects}
    if len(filters) > 1:
        return None
    return filter_for_project(projects[0])


def forget_filters() -> None:
    """Drop this process's computed filters (tests that edit a release's hierarchy or types in place)."""
    _allowed.cache_clear()


def _build(dictionary: Dictionary, type_pks: Sequence[int], root_ids: Sequence[str], project_title: str, *, strict: bool) -> ConceptFilter | None:
    types = tuple(dict.fromkeys(int(pk) for pk in type_pks))
    roots = tuple(dict.fromkeys(r.strip() for r in root_ids if r.strip()))
    if not types and not roots:
        return None
    version = dictionary.latest_version()
    if version is None:
        raise ValueError(f"{dictionary} has no release yet: import one before filtering its concepts")
    allowed = _allowed(version.pk, types, roots)
    if allowed.unknown_types:
        raise ValueError(f"the concept filter names known types that do not exist (ids {', '.join(map(str, allowed.unknown_types))})")
    if strict and allowed.missing_roots:
        missing = ", ".join(allowed.missing_roots)
        what = f"roots {missing} are not concepts" if len(allowed.missing_roots) > 1 else f"root {missing} is not a concept"
        raise ValueError(f"the concept filter's {what} of {dictionary} (release {version.release})")
    if allowed.missing_roots:
        logger.warning("project %r: concept filter roots %s are not in %s", project_title, allowed.missing_roots, version)
    if strict and not allowed.pks:
        raise ValueError(f"the concept filter matches no concept of {dictionary}: {_why_empty(allowed.type_labels, roots, allowed.root_names)}")
    return ConceptFilter(
        project_title=project_title, type_labels=allowed.type_labels, root_ids=roots, concept_pks=allowed.pks,
        concept_ids=allowed.ids, root_names=allowed.root_names, dictionary_title=str(dictionary),
    )


def _why_empty(type_labels: Sequence[str], roots: Sequence[str], root_names: Sequence[str]) -> str:
    kinds = " or ".join(type_labels)
    if not roots:
        return f"no concept has the known type {kinds}"
    under = " or ".join(f"{cid} {name}".strip() for cid, name in zip(roots, root_names, strict=True))
    return f"no concept of type {kinds} is under {under}"


# The subtrees of the roots (the roots included) within one release. UNION, not UNION ALL: a concept reached
# twice (a DAG) or a cycle in bad data is not walked again, so the walk ends.
_SUBTREE_SQL = """
WITH RECURSIVE down(id) AS (
    SELECT unnest(%s::bigint[])
    UNION
    SELECT e.child_id FROM {edges} e JOIN down ON e.parent_id = down.id WHERE e.version_id = %s
)
SELECT c.id, c.concept_id FROM {concepts} c
WHERE c.version_id = %s{subtree}{typed}
"""


@functools.lru_cache(maxsize=CACHED_FILTERS)
def _allowed(version_pk: int, type_pks: tuple[int, ...], root_ids: tuple[str, ...]) -> _Allowed:
    """The concepts of the release with one of the types (if any are given) and under one of the roots (if any)."""
    labels = dict(KnownType.objects.filter(pk__in=type_pks).values_list("pk", "label"))
    unknown_types = tuple(pk for pk in type_pks if pk not in labels)
    root_pks = dict(Concept.objects.filter(version_id=version_pk, concept_id__in=root_ids).values_list("concept_id", "pk"))
    names = dict(Concept.objects.filter(pk__in=root_pks.values()).values_list("concept_id", "preferred_name"))
    missing = tuple(cid for cid in root_ids if cid not in root_pks)
    through = Concept.known_types.through
    sql = _SUBTREE_SQL.format(
        edges=HierarchyEdge._meta.db_table,
        concepts=Concept._meta.db_table,
        subtree=" AND c.id IN (SELECT id FROM down)" if root_ids else "",
        typed=(
            f" AND EXISTS (SELECT 1 FROM {through._meta.db_table} t WHERE t.{through._meta.get_field('concept').column} = c.id"
            f" AND t.{through._meta.get_field('knowntype').column} = ANY(%s))" if type_pks else ""
        ),
    )
    params: list[Any] = [list(root_pks.values()), version_pk, version_pk]
    if type_pks:
        params.append(list(type_pks))
    rows: list[tuple[int, str]] = []
    if not root_ids or root_pks:  # roots were asked for and none exists: nothing is under them
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
    return _Allowed(
        pks=frozenset(pk for pk, _ in rows), ids=frozenset(cid for _, cid in rows),
        type_labels=tuple(labels[pk] for pk in type_pks if pk in labels), unknown_types=unknown_types,
        root_names=tuple(names.get(cid, "") for cid in root_ids), missing_roots=missing,
    )
