"""Project pages: the list, a project's overview (members, assignment, progress), an annotator's queue, the
agreement figures, and the adjudication screen.

Views check the project role (webapp.projects.access), parse input with a form, call one service and redirect with a
message that says what happened, or why nothing did.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from webapp.core.decorators import admin_required, curator_required
from webapp.corpus.models import Document
from webapp.curation.selectors import search_version
from webapp.projects import access, selectors
from webapp.projects.agreement import project_agreement
from webapp.projects.concept_filter import filter_for_project
from webapp.projects.forms import AssignForm, MemberForm, ProjectForm, ResolveForm, SettingsForm
from webapp.projects.models import Assignment, Member, Project
from webapp.projects.services import ProjectError
from webapp.projects.services.adjudication import (
    apply_agreed,
    document_units,
    open_disagreements,
    ready_for_adjudication,
)
from webapp.projects.services.adjudication import (
    resolve as resolve_unit,
)
from webapp.projects.services.assignment import assign as assign_documents
from webapp.projects.services.assignment import mark_done as finish
from webapp.projects.services.assignment import unassign
from webapp.projects.services.membership import add_member, create_project, update_settings
from webapp.projects.services.membership import remove_member as drop_member
from webapp.vocab.models import Concept
from webapp.vocab.selectors import search_concepts

DOCUMENTS_PER_PAGE = 50


def _project(request: HttpRequest, slug: str, *roles: str) -> Project:
    """The project, if the user has one of ``roles`` in it (any role when none is given)."""
    project = get_object_or_404(Project.objects.select_related("collection__dictionary"), slug=slug)
    allowed = access.has_role(request.user, project, *roles) if roles else access.can_view_project(request.user, project)
    if not allowed:
        if not access.can_view_project(request.user, project):
            raise PermissionDenied(f"You are not a member of project “{project}”.")
        names = " or ".join(Member.Role(r).label.lower() for r in roles)
        raise PermissionDenied(f"This needs the {names} role in project “{project}”.")
    return project


# --- list, creation, settings ------------------------------------------------------------------------------


@require_GET
@curator_required
def project_list(request: HttpRequest) -> HttpResponse:
    return render(request, "projects/list.html", {"summaries": selectors.project_summaries(request.user)})


@require_http_methods(["GET", "POST"])
@admin_required
def project_create(request: HttpRequest) -> HttpResponse:
    form = ProjectForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        d = form.cleaned_data
        try:
            project = create_project(
                by=request.user, slug=d["slug"], title=d["title"], description=d["description"], collection=d["collection"],
                annotators_per_document=d["annotators_per_document"], document_ids=d["documents"],
                concept_types=list(d["concept_types"]), concept_roots=d["concept_roots"],
            )
        except ProjectError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Project “{project}” created; you are its manager. {_scope_summary(project)} "
                                      "Add annotators, then assign documents.")
            return redirect("projects:detail", slug=project.slug)
    return render(request, "projects/create.html", {"form": form}, status=400 if form.errors else 200)


def _scope_summary(project: Project) -> str:
    """What the new project hides from curators outside it, in numbers."""
    total = Document.objects.filter(collection_id=project.collection_id).count()
    covered = selectors.project_documents(project).count()
    if covered >= total:
        return f"All {total} documents of {project.collection} are now seen by its members only."
    return (f"{covered} of the {total} documents of {project.collection} are now seen by its members only; "
            f"the other {total - covered} stay open to every curator.")


@require_http_methods(["GET", "POST"])
@curator_required
def project_settings(request: HttpRequest, slug: str) -> HttpResponse:
    project = _project(request, slug, Member.Role.MANAGER)
    initial = {"title": project.title, "description": project.description, "annotators_per_document": project.annotators_per_document,
               "concept_types": project.concept_types.all(), "concept_roots": " ".join(project.concept_roots)}
    form = SettingsForm(request.POST or None, initial=initial, dictionary_id=project.collection.dictionary_id)
    if request.method == "POST" and form.is_valid():
        d = form.cleaned_data
        try:
            update_settings(project, title=d["title"], description=d["description"], annotators_per_document=d["annotators_per_document"],
                            concept_types=list(d["concept_types"]), concept_roots=d["concept_roots"])
        except ProjectError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Settings of “{project}” saved.")
            return redirect("projects:detail", slug=project.slug)
    return render(request, "projects/settings.html", {"project": project, "form": form}, status=400 if form.errors else 200)


# --- overview, members, assignment -------------------------------------------------------------------------


@require_GET
@curator_required
def project_detail(request: HttpRequest, slug: str) -> HttpResponse:
    project = _project(request, slug)
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
def members(request: HttpRequest, slug: str) -> HttpResponse:
    project = _project(request, slug, Member.Role.MANAGER)
    form = MemberForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Member not added: " + "; ".join(e for errors in form.errors.values() for e in errors))
        return redirect("projects:detail", slug=slug)
    try:
        member = add_member(project, form.cleaned_data["username"], form.cleaned_data["role"], request.user)
    except ProjectError as exc:
        messages.error(request, f"Member not added: {exc}.")
    else:
        messages.success(request, f"{member.user.username} is now {member.get_role_display().lower()} of “{project}”.")
    return redirect("projects:detail", slug=slug)


@require_POST
@curator_required
def remove_member(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    project = _project(request, slug, Member.Role.MANAGER)
    member = get_object_or_404(Member.objects.select_related("user"), project=project, pk=pk)
    try:
        drop_member(member)
    except ProjectError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{member.user.username} is no longer {member.get_role_display().lower()} of “{project}”.")
    return redirect("projects:detail", slug=slug)


@require_POST
@curator_required
def assign(request: HttpRequest, slug: str) -> HttpResponse:
    project = _project(request, slug, Member.Role.MANAGER)
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
    project = _project(request, slug, Member.Role.MANAGER)
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
    project = _project(request, slug)
    rows = list(selectors.my_assignments(project, request.user))
    return render(request, "projects/queue.html", {"project": project, "rows": rows,
                                                    "todo": sum(1 for r in rows if r.state == Assignment.State.ASSIGNED)})


@require_POST
@curator_required
def mark_done(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    project = _project(request, slug)
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
    project = _project(request, slug, Member.Role.MANAGER, Member.Role.ADJUDICATOR)
    return render(request, "projects/agreement.html", {"project": project, "a": project_agreement(project)})


# --- adjudication -------------------------------------------------------------------------------------------


@require_GET
@curator_required
def adjudication_list(request: HttpRequest, slug: str) -> HttpResponse:
    project = _project(request, slug, Member.Role.ADJUDICATOR)
    rows = []
    for progress in selectors.document_progress(project):
        if len(progress.assignments) == 0:
            continue
        ready = progress.all_done
        rows.append((progress, ready, open_disagreements(project, progress.document) if ready else None))
    rows.sort(key=lambda r: (not r[1], -(r[2] or 0), r[0].document.pk))
    return render(request, "projects/adjudication_list.html", {"project": project, "rows": rows})


def _document(project: Project, pk: int) -> Document:
    document = get_object_or_404(Document, pk=pk)
    if not selectors.project_documents(project).filter(pk=pk).exists():
        raise PermissionDenied(f"{document} is not a document of project “{project}”.")
    return document


@require_GET
@curator_required
def adjudicate_document(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    project = _project(request, slug, Member.Role.ADJUDICATOR)
    document = _document(project, pk)
    assignments, units = document_units(project, document)
    ready = ready_for_adjudication(assignments)
    annotators = [a.annotator.username for a in assignments]
    disputed = [u for u in units if not u.agreed]
    context = {
        "project": project,
        "document": document,
        "assignments": assignments,
        "annotators": annotators,
        "ready": ready,
        "units": units,
        "open_count": sum(1 for u in disputed if not u.resolved),
        "agreed_open": sum(1 for u in units if u.agreed and not u.resolved),
        "selected": request.GET.get("u", ""),
        "segments": _segments(document.text, units),
        "next_document": _next_to_adjudicate(project, document),
    }
    return render(request, "projects/adjudicate.html", context)


def _segments(text: str, units: list[Any]) -> list[tuple[str, str, str]]:
    """The text cut at the units' spans: (text, unit key or "", state); a unit inside an earlier one is not drawn."""
    out: list[tuple[str, str, str]] = []
    at = 0
    for unit in units:
        if unit.start < at:
            continue
        state = "resolved" if unit.resolved else ("agreed" if unit.agreed else "open")
        out.append((text[at:unit.start], "", ""))
        out.append((text[unit.start:unit.end], unit.key, state))
        at = unit.end
    out.append((text[at:], "", ""))
    return [seg for seg in out if seg[0]]


def _next_to_adjudicate(project: Project, current: Document) -> Document | None:
    for progress in selectors.document_progress(project):
        if progress.document.pk != current.pk and progress.all_done and open_disagreements(project, progress.document):
            return progress.document
    return None


@require_POST
@curator_required
def resolve(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    project = _project(request, slug, Member.Role.ADJUDICATOR)
    document = _document(project, pk)
    url = reverse("projects:adjudicate", args=[slug, pk])
    if request.POST.get("apply_agreed"):
        try:
            n = apply_agreed(project, document, request.user)
        except ProjectError as exc:
            messages.error(request, f"Not applied: {exc}.")
        else:
            messages.success(request, f"{n} agreed decision{'s' if n != 1 else ''} written to {document}.")
        return redirect(url)
    form = ResolveForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Not resolved: " + "; ".join(e for errors in form.errors.values() for e in errors))
        return redirect(url)
    d = form.cleaned_data
    concept = get_object_or_404(Concept, pk=d["concept"]) if d.get("concept") else None
    try:
        adjudication = resolve_unit(project, document, start=d["start"], end=d["end"], user=request.user,
                                    annotator=d.get("annotator") or None, concept=concept, label=d.get("label") or None)
    except ProjectError as exc:
        messages.error(request, f"Not resolved: {exc}.")
        return redirect(f"{url}?u={d['start']}-{d['end']}")
    who = f"{adjudication.chosen_annotator.username}'s decision" if adjudication.chosen_annotator else "your decision"
    messages.success(request, f"“{document.text[d['start']:d['end']]}” → {adjudication.label} ({who}).")
    return redirect(f"{url}?u=next-{d['start']}-{d['end']}")


@require_GET
@curator_required
def concept_search(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Concepts for the adjudicator's third choice (the project's concept filter applies)."""
    project = _project(request, slug, Member.Role.ADJUDICATOR)
    document = _document(project, pk)
    query = request.GET.get("q", "").strip()
    dictionary = project.collection.dictionary
    hits = []
    if dictionary is not None and query:
        version = search_version(project.collection)
        concept_filter = filter_for_project(project)
        within = concept_filter.concept_ids if concept_filter is not None else None
        hits = search_concepts(version, query, within=within) if version is not None else []
    return render(request, "projects/_concept_hits.html", {"project": project, "document": document, "hits": hits, "query": query,
                                                            "start": request.GET.get("start", ""), "end": request.GET.get("end", "")})

