"""Who may see and change what, once collections belong to projects.

- A workbench admin may do everything.
- A collection no project uses is the curators' as before.
- A project's collection is visible to the project's members only; annotators decide on their own copies, so on the
  project's documents themselves only adjudicators and managers decide (that is adjudication).
- A workspace (an annotator's copies) is the annotator's: only they decide there; the project's adjudicators and
  managers may look; other annotators may not (double annotation is blind).

Views call :func:`check_view` / :func:`check_decide` with the collection at hand; lists use
:func:`visible_collections`. Every refusal is a PermissionDenied whose message names the project.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet

from webapp.core.roles import is_admin, is_curator
from webapp.corpus.models import Collection
from webapp.projects.models import Member, Project, Workspace

Role = Member.Role
ALL_ROLES = frozenset(Role.values)


def roles_in(user: Any, project: Project) -> frozenset[str]:
    """The user's roles in the project (cached per request on the user object)."""
    if not getattr(user, "is_authenticated", False):
        return frozenset()
    cache: dict[int, frozenset[str]] = user.__dict__.setdefault("_project_roles", {})
    if project.pk not in cache:
        cache[project.pk] = frozenset(Member.objects.filter(project=project, user=user).values_list("role", flat=True))
    return cache[project.pk]


def has_role(user: Any, project: Project, *roles: str) -> bool:
    return is_admin(user) or bool(roles_in(user, project) & set(roles))


def can_view_project(user: Any, project: Project) -> bool:
    return has_role(user, project, *ALL_ROLES)


def can_manage(user: Any, project: Project) -> bool:
    return has_role(user, project, Role.MANAGER)


def can_adjudicate(user: Any, project: Project) -> bool:
    return has_role(user, project, Role.ADJUDICATOR)


def visible_projects(user: Any) -> QuerySet[Project]:
    if is_admin(user):
        return Project.objects.all()
    return Project.objects.filter(members__user=user).distinct()


def visible_collections(user: Any) -> QuerySet[Collection]:
    """The collections a user may list: never workspaces (they are reached through the project's pages)."""
    listed = Collection.objects.filter(is_workspace=False)
    if is_admin(user):
        return listed
    if not is_curator(user):
        return listed.none()
    # Subqueries, not joins: the callers annotate counts over documents, which a join would multiply.
    used = Project.objects.values("collection")
    mine = Project.objects.filter(members__user=user).values("collection")
    return listed.filter(~Q(pk__in=used) | Q(pk__in=mine))


def _workspace(collection: Collection) -> Workspace | None:
    if not collection.is_workspace:
        return None
    return Workspace.objects.select_related("project", "annotator").filter(collection=collection).first()


def _projects_of(collection: Collection) -> list[Project]:
    return list(Project.objects.filter(collection=collection))


def view_refusal(user: Any, collection: Collection) -> str | None:
    """Why the user may not see the collection, or None when they may."""
    if is_admin(user):
        return None
    if not is_curator(user):
        return "This page needs the curator role."
    workspace = _workspace(collection)
    if workspace is not None:
        if workspace.annotator_id == user.pk or has_role(user, workspace.project, Role.ADJUDICATOR, Role.MANAGER):
            return None
        return f"These are {workspace.annotator}'s copies in project “{workspace.project}”: only they, the project's adjudicators and managers may see them."
    projects = _projects_of(collection)
    if projects and not any(roles_in(user, p) for p in projects):
        names = ", ".join(f"“{p}”" for p in projects)
        return f"The collection {collection} belongs to project {names}, of which you are not a member."
    return None


def decide_refusal(user: Any, collection: Collection) -> str | None:
    """Why the user may not change mentions and links of the collection, or None when they may."""
    refusal = view_refusal(user, collection)
    if refusal or is_admin(user):
        return refusal
    workspace = _workspace(collection)
    if workspace is not None:
        if workspace.annotator_id == user.pk:
            return None
        return f"These are {workspace.annotator}'s copies: only {workspace.annotator} decides on them."
    projects = _projects_of(collection)
    if projects and not any(has_role(user, p, Role.ADJUDICATOR, Role.MANAGER) for p in projects):
        return (f"The documents of {collection} are curated through project “{projects[0]}”: annotate your copies from "
                "the project's page; decisions here are the adjudicators'.")
    return None


def check_view(user: Any, collection: Collection) -> None:
    refusal = view_refusal(user, collection)
    if refusal:
        raise PermissionDenied(refusal)


def check_decide(user: Any, collection: Collection) -> None:
    refusal = decide_refusal(user, collection)
    if refusal:
        raise PermissionDenied(refusal)
