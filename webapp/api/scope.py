"""A project-scoped API token reaches its project's data only.

The views scope every queryset by the access rule for the request's user (webapp.projects.access); this filter
backend, one of DRF's default filter backends (settings.REST_FRAMEWORK), narrows what they kept to the project of
the token the request came with (webapp.people.models.ApiToken.project). DRF runs the filter backends on every
list and on every detail lookup (``get_object``), so a collection, document, mention or link outside the project
is left out of lists and is a 404 when asked for by name. A session, or a token for everything, is not narrowed.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Model, Q, QuerySet

from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.projects.models import Project, Workspace
from webapp.projects.selectors import project_documents

# The path from each kind of row the API lists to its document ("" for a document itself).
_TO_DOCUMENT: dict[type[Model], str] = {Document: "", Mention: "document__", Link: "mention__document__"}


def token_project(request: Any) -> Project | None:
    """The project the request's token is scoped to, or None (a session, or a token for everything)."""
    token = getattr(request, "auth", None)
    project_id = getattr(token, "project_id", None)
    return token.project if project_id else None


def in_project_q(project: Project, prefix: str = "") -> Q:
    """The documents (reached through ``prefix``) of the project: those it covers, and its annotators' copies."""
    workspaces = Workspace.objects.filter(project=project).values("collection")
    return (Q(**{f"{prefix}pk__in": project_documents(project).values("pk")})
            | Q(**{f"{prefix}collection__in": workspaces}))


class ProjectScopeFilter:
    """DRF filter backend: narrows collections, documents, mentions and links to a scoped token's project."""

    def filter_queryset(self, request: Any, queryset: QuerySet[Any], view: Any) -> QuerySet[Any]:
        project = token_project(request)
        if project is None:
            return queryset
        if queryset.model is Collection:
            workspaces = Workspace.objects.filter(project=project).values("collection")
            return queryset.filter(Q(pk=project.collection_id) | Q(pk__in=workspaces))
        prefix = _TO_DOCUMENT.get(queryset.model)
        return queryset if prefix is None else queryset.filter(in_project_q(project, prefix))

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        return []  # nothing a client sends: the scope is the token's
