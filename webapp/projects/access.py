"""Who may see and change what, once collections belong to projects.

- A workbench admin may do everything.
- A collection no project uses is the curators' as before.
- A project restricts what it covers, not the rest of its collection: a project over the whole collection covers every
  document of it, one over "only these documents" those documents. A covered document is visible to the members of a
  project covering it only; a document no project covers stays every curator's. A collection is hidden from a
  curator only when a project covers all of it and the curator is a member of none of its projects.
- Annotators decide on their own copies, so on a project's documents themselves only its adjudicators and managers
  decide (that is adjudication).
- A workspace (an annotator's copies) is the annotator's: only they decide there; the project's adjudicators and
  managers may look; other annotators may not (double annotation is blind).

Views call :func:`check_view` with the collection at hand and :func:`check_view_document` /
:func:`check_decide_document` with the document; lists use :func:`visible_collections` and
:func:`visible_documents` (or :func:`visible_documents_q` on mentions, links, decisions). A project's own pages
take the project with :func:`project_for`. Every refusal is a PermissionDenied whose message names the project and
who to ask (or the role that is missing).

One rule per kind of row (issue 43): :func:`scope` narrows any queryset of a kind :data:`DOCUMENT_PATHS`,
:data:`COLLECTION_PATHS` or :data:`OWN_RULES` knows (collections, documents, mentions, links, decisions,
evaluations and their outcomes, projects, workspaces) to the rows the user may read, workspaces included where
:func:`readable_workspaces` allows them. A kind it does not know is an error, not an unscoped list. The API's
viewsets, the comparison pages and the other reads go through it; ``tests/integration/test_route_walk.py`` requests
every route as every kind of user, so a view that forgets it fails there.
"""

from __future__ import annotations

from typing import Any, TypeVar

from django.core.exceptions import PermissionDenied
from django.db.models import Model, Q, QuerySet
from django.shortcuts import get_object_or_404

from webapp.core.roles import VIEWER_WRITE_REFUSAL, can_read, is_admin, is_curator
from webapp.corpus.models import Collection, Document
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


def _whole_collection_projects() -> QuerySet[Project]:
    """Projects over all of their collection (no chosen documents)."""
    chosen = Project.documents.through.objects.values("project")
    return Project.objects.exclude(pk__in=chosen)


def visible_collections(user: Any) -> QuerySet[Collection]:
    """The collections a user may list: never workspaces (they are reached through the project's pages).

    A collection only partly covered by projects is listed to everyone; :func:`visible_documents` hides the covered
    documents from those outside the projects."""
    listed = Collection.objects.filter(is_workspace=False)
    if is_admin(user):
        return listed
    if not can_read(user):
        return listed.none()
    # Subqueries, not joins: the callers annotate counts over documents, which a join would multiply.
    covered_whole = _whole_collection_projects().values("collection")
    mine = Project.objects.filter(members__user=user).values("collection")
    return listed.filter(~Q(pk__in=covered_whole) | Q(pk__in=mine))


def _covered_by(projects: QuerySet[Project], prefix: str) -> Q:
    """Documents (reached through ``prefix``, e.g. "document__" from a mention) that one of the projects covers."""
    whole = projects.filter(pk__in=_whole_collection_projects()).values("collection")
    chosen = Project.documents.through.objects.filter(project__in=projects).values("document")
    return Q(**{f"{prefix}collection__in": whole}) | Q(**{f"{prefix}pk__in": chosen})


def visible_documents_q(user: Any, prefix: str = "") -> Q:
    """A filter keeping the documents (or, with ``prefix``, the rows of documents) outside every project the user is
    not a member of. It says nothing of workspaces: combine it with :func:`visible_collections`."""
    if is_admin(user):
        return Q()
    if not can_read(user):
        return Q(**{f"{prefix}pk__in": []})
    others = Project.objects.exclude(members__user=user)
    mine = Project.objects.filter(members__user=user)
    # Hidden: covered by a project the user is not in and by none the user is in.
    return ~(_covered_by(others, prefix) & ~_covered_by(mine, prefix))


def visible_documents(user: Any) -> QuerySet[Document]:
    """The documents a user may list (never an annotator's copies: those are reached through the project)."""
    return Document.objects.filter(collection__in=visible_collections(user)).filter(visible_documents_q(user))


def hidden_documents_note(user: Any, collection: Collection) -> str:
    """What a collection's pages say when projects the user is not in hide some of its documents ("" when none)."""
    if is_admin(user) or collection.is_workspace:
        return ""
    hidden = Document.objects.filter(collection=collection).exclude(visible_documents_q(user))
    count = hidden.count()
    if not count:
        return ""
    projects = list(Project.objects.filter(collection=collection).exclude(members__user=user).order_by("slug"))
    return (f"{count} document{'s' if count != 1 else ''} of {collection} {'are' if count != 1 else 'is'} curated in "
            f"project {_names(projects)}, of which you are not a member, and not listed; the others are open to you as "
            f"before. {_ask(projects)}")


def _workspace(collection: Collection) -> Workspace | None:
    if not collection.is_workspace:
        return None
    return Workspace.objects.select_related("project", "annotator").filter(collection=collection).first()


def _projects_of(collection: Collection) -> list[Project]:
    return list(Project.objects.filter(collection=collection))


def projects_covering(document: Document) -> list[Project]:
    """The projects whose scope takes in the document: those over its whole collection and those that chose it."""
    chosen = Project.documents.through.objects.filter(document=document).values("project")
    whole = _whole_collection_projects().filter(collection_id=document.collection_id)
    return list(Project.objects.filter(Q(pk__in=chosen) | Q(pk__in=whole)).order_by("slug"))


def _ask(projects: list[Project]) -> str:
    """Who to ask for access: the projects' managers by name, else an admin."""
    managers = sorted(set(Member.objects.filter(project__in=projects, role=Role.MANAGER)
                          .values_list("user__username", flat=True)))
    if managers:
        return f"Ask a manager of the project ({', '.join(managers)}) to add you as a member."
    return "Ask a workbench admin to add you as a member."


def _names(projects: list[Project]) -> str:
    return ", ".join(f"“{p}”" for p in projects)


def view_refusal(user: Any, collection: Collection) -> str | None:
    """Why the user may not see the collection, or None when they may (some of its documents may still be hidden:
    :func:`document_view_refusal`)."""
    if is_admin(user):
        return None
    if not can_read(user):
        return "This page needs the viewer, curator or admin role."
    workspace = _workspace(collection)
    if workspace is not None:
        if workspace.annotator_id == user.pk or has_role(user, workspace.project, Role.ADJUDICATOR, Role.MANAGER):
            return None
        return f"These are {workspace.annotator}'s copies in project “{workspace.project}”: only they, the project's adjudicators and managers may see them."
    whole = list(_whole_collection_projects().filter(collection=collection))
    if whole and not any(roles_in(user, p) for p in _projects_of(collection)):
        return (f"The collection {collection} belongs to project {_names(whole)}, of which you are not a member. "
                f"{_ask(whole)}")
    return None


def document_view_refusal(user: Any, document: Document) -> str | None:
    """Why the user may not see the document, or None when they may."""
    refusal = view_refusal(user, document.collection)
    if refusal or is_admin(user) or document.collection.is_workspace:
        return refusal
    covering = projects_covering(document)
    if covering and not any(roles_in(user, p) for p in covering):
        return (f"The document {document.external_id} of {document.collection} is curated in project "
                f"{_names(covering)}, of which you are not a member; the collection's other documents are open to you. "
                f"{_ask(covering)}")
    return None


def decide_refusal(user: Any, collection: Collection) -> str | None:
    """Why the user may not change mentions and links of the collection's documents in general (a document a
    project covers may be refused still: :func:`document_decide_refusal`), or None when they may."""
    refusal = view_refusal(user, collection) or (None if is_curator(user) else VIEWER_WRITE_REFUSAL)
    if refusal or is_admin(user):
        return refusal
    workspace = _workspace(collection)
    if workspace is not None:
        if workspace.annotator_id == user.pk:
            return None
        return f"These are {workspace.annotator}'s copies: only {workspace.annotator} decides on them."
    whole = list(_whole_collection_projects().filter(collection=collection))
    return _adjudicators_only(user, whole, str(collection))


def _adjudicators_only(user: Any, projects: list[Project], what: str) -> str | None:
    if projects and not any(has_role(user, p, Role.ADJUDICATOR, Role.MANAGER) for p in projects):
        return (f"The documents of {what} are curated through project “{projects[0]}”: annotate your copies from "
                "the project's page; decisions here are the adjudicators'.")
    return None


def document_decide_refusal(user: Any, document: Document) -> str | None:
    """Why the user may not change the document's mentions and links, or None when they may."""
    refusal = document_view_refusal(user, document) or (None if is_curator(user) else VIEWER_WRITE_REFUSAL)
    if refusal or is_admin(user):
        return refusal
    if document.collection.is_workspace:
        return decide_refusal(user, document.collection)
    return _adjudicators_only(user, projects_covering(document), f"document {document.external_id}")


def decidable_documents_q(user: Any, prefix: str = "") -> Q:
    """A filter keeping the documents (through ``prefix``) on which the user may decide: those no project covers,
    and those of projects where the user adjudicates or manages. A decision spread to identical mentions stays in
    them. Workspaces are not this filter's business (a decision there stays in its document's collection)."""
    if is_admin(user):
        return Q()
    if not is_curator(user):
        return Q(**{f"{prefix}pk__in": []})
    judges = Project.objects.filter(members__user=user, members__role__in=[Role.ADJUDICATOR, Role.MANAGER])
    return ~_covered_by(Project.objects.all(), prefix) | _covered_by(judges, prefix)


def check_view(user: Any, collection: Collection) -> None:
    refusal = view_refusal(user, collection)
    if refusal:
        raise PermissionDenied(refusal)


def check_view_document(user: Any, document: Document) -> None:
    refusal = document_view_refusal(user, document)
    if refusal:
        raise PermissionDenied(refusal)


def check_decide_document(user: Any, document: Document) -> None:
    refusal = document_decide_refusal(user, document)
    if refusal:
        raise PermissionDenied(refusal)


def project_refusal(user: Any, project: Project, *roles: str) -> str | None:
    """Why the user may not open a page of the project that needs one of ``roles`` (any role when none is given),
    or None when they may."""
    if not can_view_project(user, project):
        return f"You are not a member of project “{project}”."
    if roles and not has_role(user, project, *roles):
        names = " or ".join(Role(r).label.lower() for r in roles)
        return f"This needs the {names} role in project “{project}”."
    return None


def project_for(user: Any, slug: str, *roles: str) -> Project:
    """The project named ``slug`` (404 when none is), if the user has one of ``roles`` in it (any role when none is
    given); else PermissionDenied."""
    project = get_object_or_404(Project.objects.select_related("collection__dictionary"), slug=slug)
    refusal = project_refusal(user, project, *roles)
    if refusal:
        raise PermissionDenied(refusal)
    return project


# --- one rule per kind of row (issue 43) ------------------------------------------------------------------------

Row = TypeVar("Row", bound=Model)

# How each kind of row reaches its document ("" : it is one) or, for rows about a whole collection, its collection.
# A row is readable when its document (or collection) is: the one rule, written once for every kind.
DOCUMENT_PATHS: dict[str, str] = {
    "corpus.Document": "",
    "corpus.Mention": "document__",
    "corpus.Link": "mention__document__",
    "curation.Decision": "document__",
    "projects.Assignment": "document__",
    "projects.Adjudication": "document__",
    "training.MentionOutcome": "mention__document__",
}
COLLECTION_PATHS: dict[str, str] = {
    "corpus.Collection": "",
    "training.Evaluation": "collection__",
}


def readable_workspaces(user: Any) -> QuerySet[Workspace]:
    """The workspaces (annotators' copies) the user may look into: their own, and every one of a project they
    adjudicate or manage; an admin all of them (the rule of :func:`view_refusal`, as a queryset)."""
    if is_admin(user):
        return Workspace.objects.all()
    if not can_read(user):
        return Workspace.objects.none()
    judged = Member.objects.filter(user=user, role__in=[Role.ADJUDICATOR, Role.MANAGER]).values("project")
    return Workspace.objects.filter(Q(annotator=user) | Q(project__in=judged))


def readable_collections_q(user: Any, prefix: str = "") -> Q:
    """A filter keeping the rows whose collection (through ``prefix``) the user may open: those
    :func:`visible_collections` lists and the workspaces :func:`readable_workspaces` allows."""
    if is_admin(user):
        return Q()
    listed = visible_collections(user).values("pk")
    return Q(**{f"{prefix}pk__in": listed}) | Q(**{f"{prefix}pk__in": readable_workspaces(user).values("collection")})


def readable_documents_q(user: Any, prefix: str = "") -> Q:
    """A filter keeping the rows whose document (through ``prefix``) the user may read: in a collection they may
    open, and not hidden by a project they are not in (:func:`visible_documents_q`)."""
    if is_admin(user):
        return Q()
    return readable_collections_q(user, f"{prefix}collection__") & visible_documents_q(user, prefix)


OWN_RULES = {
    "projects.Project": lambda user: Q(pk__in=visible_projects(user).values("pk")),
    "projects.Workspace": lambda user: Q(pk__in=readable_workspaces(user).values("pk")),
}


def scope(queryset: QuerySet[Row], user: Any) -> QuerySet[Row]:
    """The rows of ``queryset`` the user may read, by the rule of its kind. A kind without a rule raises
    LookupError: a new kind of row is given its path here before any page can list it."""
    label = queryset.model._meta.label
    if label in DOCUMENT_PATHS:
        return queryset.filter(readable_documents_q(user, DOCUMENT_PATHS[label]))
    if label in COLLECTION_PATHS:
        return queryset.filter(readable_collections_q(user, COLLECTION_PATHS[label]))
    if label in OWN_RULES:
        return queryset.filter(OWN_RULES[label](user))
    raise LookupError(f"webapp.projects.access has no rule for {label}: add its path to DOCUMENT_PATHS or "
                      "COLLECTION_PATHS")


def readable_collections(user: Any) -> QuerySet[Collection]:
    """The collections the user may open by name, workspaces included (lists for people use
    :func:`visible_collections`, which leaves workspaces to the project's pages)."""
    return scope(Collection.objects.all(), user)


def readable_documents(user: Any) -> QuerySet[Document]:
    return scope(Document.objects.all(), user)
