"""The team's pages of a project: its overview (members, assignment, progress), assigning documents, the
annotator's queue and the agreement figures. Adjudication is :mod:`webapp.teamwork.adjudication_views`.

Views check the project role (webapp.projects.access), parse input with a form, call one service and redirect with a
message that says what happened, or why nothing did.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from webapp.core.decorators import curator_required
from webapp.corpus.models import Document
from webapp.projects import access, selectors
from webapp.projects.concept_filter import filter_for_project
from webapp.projects.forms import MemberForm
from webapp.projects.models import Assignment, Member, Project
from webapp.projects.services import ProjectError
from webapp.teamwork.agreement import project_agreement
from webapp.teamwork.forms import AssignForm
from webapp.teamwork.services.assignment import assign as assign_documents
from webapp.teamwork.services.assignment import mark_done as finish
from webapp.teamwork.services.assignment import unassign

DOCUMENTS_PER_PAGE = 50


# --- overview, assignment -----------------------------------------------------------------------------------


@require_GET
@curator_required
def project_detail(request: HttpRequest, slug: str) -> HttpResponse:
    project = access.project_for(request.user, slug)
    manage = access.can_manage(request.user, project)
    adjudicate = access.can_adjudicate(request.user, project)
    documents = selectors.project_documents(project).order_by("pk")
    page = Paginator(documents, DOCUMENTS_PER_PAGE).get_page(request.GET.get("page"))
    ids = [d.pk for d in page]
    context: dict[str, Any] = {
        "project": project,
        "can_manage": manage,
        "can_adjudicate": adjudicate,
        "members": selectors.members_by_role(project),
        "loads": selectors.annotator_loads(project),
        "page": page,
        # Annotators see their own assignments only: in double annotation they do not learn who else has a document.
        "progress": selectors.document_progress(project, Document.objects.filter(pk__in=ids)) if (manage or adjudicate) else [],
        "mine": list(selectors.my_assignments(project, request.user)[:20]),
        "concept_filter": filter_for_project(project),
        "document_count": documents.count(),
    }
    if manage:
        context["member_form"] = MemberForm()
        context["assign_form"] = AssignForm(project=project)
    return render(request, "projects/detail.html", context)


@require_POST
@curator_required
def assign(request: HttpRequest, slug: str) -> HttpResponse:
    project = access.project_for(request.user, slug, Member.Role.MANAGER)
    form = AssignForm(request.POST, project=project)
    if not form.is_valid():
        messages.error(request, "Nothing assigned: " + "; ".join(e for errors in form.errors.values() for e in errors))
        return redirect("projects:detail", slug=slug)
    d = form.cleaned_data
    try:
        created = assign_documents(project, mode=d["mode"], annotators=list(d["annotators"]), by=request.user, documents=d["document_objects"])
    except ProjectError as exc:
        messages.error(request, f"Nothing assigned: {exc}.")
    else:
        docs = len({a.document_id for a in created})
        messages.success(request, f"{len(created)} assignment{'s' if len(created) != 1 else ''} made over {docs} document{'s' if docs != 1 else ''}; "
                                  "each annotator finds them in their queue.")
    return redirect("projects:detail", slug=slug)


@require_POST
@curator_required
def remove_assignment(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    project = access.project_for(request.user, slug, Member.Role.MANAGER)
    assignment = get_object_or_404(Assignment.objects.select_related("annotator", "document", "copy"), project=project, pk=pk)
    try:
        unassign(assignment)
    except ProjectError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{assignment.document} is no longer assigned to {assignment.annotator.username}.")
    return redirect("projects:detail", slug=slug)


# --- the annotator's queue --------------------------------------------------------------------------------


@require_GET
@curator_required
def my_queue(request: HttpRequest, slug: str) -> HttpResponse:
    project = access.project_for(request.user, slug)
    rows = list(selectors.my_assignments(project, request.user))
    return render(request, "projects/queue.html", {"project": project, "rows": rows,
                                                    "todo": sum(1 for r in rows if r.state == Assignment.State.ASSIGNED)})


@require_POST
@curator_required
def mark_done(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    project = access.project_for(request.user, slug)
    assignment = get_object_or_404(Assignment.objects.select_related("document", "copy__collection"), project=project, pk=pk)
    try:
        finish(assignment, request.user)
    except ProjectError as exc:
        messages.error(request, f"Not marked done: {exc}.")
        return redirect(reverse("curation:document", args=[assignment.copy.collection.slug, assignment.copy_id]))
    messages.success(request, f"{assignment.document} is done. " + _next_hint(project, request.user))
    return redirect("projects:queue", slug=slug)


def _next_hint(project: Project, user: Any) -> str:
    left = Assignment.objects.filter(project=project, annotator=user, state=Assignment.State.ASSIGNED).count()
    return f"{left} document{'s' if left != 1 else ''} left in your queue." if left else "Your queue is empty: thank you."


# --- agreement ----------------------------------------------------------------------------------------------


@require_GET
@curator_required
def agreement(request: HttpRequest, slug: str) -> HttpResponse:
    project = access.project_for(request.user, slug, Member.Role.MANAGER, Member.Role.ADJUDICATOR)
    return render(request, "projects/agreement.html", {"project": project, "a": project_agreement(project)})
