"""Read-only queries of the project pages: documents, assignments, progress."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Q, QuerySet

from webapp.corpus.models import Document
from webapp.projects.access import visible_projects
from webapp.projects.models import Adjudication, Assignment, Member, Project


def project_documents(project: Project) -> QuerySet[Document]:
    """The project's documents: the chosen subset of its collection, or all of it."""
    if project.documents.exists():
        return project.documents.all()
    return Document.objects.filter(collection_id=project.collection_id)


def members_by_role(project: Project) -> dict[str, list[Member]]:
    out: dict[str, list[Member]] = {role: [] for role in Member.Role.values}
    for member in Member.objects.filter(project=project).select_related("user").order_by("user__username"):
        out[member.role].append(member)
    return out


def annotators(project: Project) -> list[Any]:
    return [m.user for m in Member.objects.filter(project=project, role=Member.Role.ANNOTATOR).select_related("user").order_by("user__username")]


@dataclass
class DocumentProgress:
    document: Document
    assignments: list[Assignment] = field(default_factory=list)
    adjudicated: int = 0

    @property
    def all_done(self) -> bool:
        return bool(self.assignments) and all(a.state == Assignment.State.DONE for a in self.assignments)


def document_progress(project: Project, documents: QuerySet[Document] | None = None) -> list[DocumentProgress]:
    docs = list((documents if documents is not None else project_documents(project)).order_by("pk"))
    rows = {d.pk: DocumentProgress(d) for d in docs}
    for a in Assignment.objects.filter(project=project, document_id__in=rows).select_related("annotator").order_by("annotator__username"):
        rows[a.document_id].assignments.append(a)
    counts = Adjudication.objects.filter(project=project, document_id__in=rows).values("document_id").annotate(n=Count("id"))
    for row in counts:
        rows[row["document_id"]].adjudicated = row["n"]
    return [rows[d.pk] for d in docs]


@dataclass(frozen=True)
class AnnotatorLoad:
    username: str
    assigned: int
    done: int


def annotator_loads(project: Project) -> list[AnnotatorLoad]:
    rows = (
        Assignment.objects.filter(project=project).values("annotator__username")
        .annotate(total=Count("id"), done=Count("id", filter=Q(state=Assignment.State.DONE)))
        .order_by("annotator__username")
    )
    return [AnnotatorLoad(r["annotator__username"], r["total"], r["done"]) for r in rows]


def my_assignments(project: Project, user: Any) -> QuerySet[Assignment]:
    return (
        Assignment.objects.filter(project=project, annotator=user).select_related("document", "copy__collection")
        .annotate(open_mentions=Count("copy__mentions", filter=Q(copy__mentions__status__in=["pending", "suggested"])),
                  mentions=Count("copy__mentions"))
        .order_by("state", "document__pk")
    )


def assignment_of(document: Document) -> Assignment | None:
    """The assignment whose copy this document is (None for any other document)."""
    if not document.collection.is_workspace:
        return None
    return Assignment.objects.select_related("project", "document").filter(copy=document).first()


@dataclass(frozen=True)
class ProjectSummary:
    project: Project
    documents: int
    assigned: int
    done: int
    my_open: int  # the user's assignments not done yet
    roles: tuple[str, ...]


def project_summaries(user: Any) -> list[ProjectSummary]:
    """The projects the user may see, with progress and what is waiting for the user."""
    out = []
    for project in visible_projects(user).select_related("collection").order_by("slug"):
        counts = Assignment.objects.filter(project=project).aggregate(
            assigned=Count("id"), done=Count("id", filter=Q(state=Assignment.State.DONE)),
            mine=Count("id", filter=Q(annotator=user, state=Assignment.State.ASSIGNED)),
        )
        roles = tuple(Member.objects.filter(project=project, user=user).values_list("role", flat=True))
        out.append(ProjectSummary(project, project_documents(project).count(), counts["assigned"], counts["done"], counts["mine"], roles))
    return out
