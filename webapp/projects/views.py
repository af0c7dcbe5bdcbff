"""Project pages about the project itself: the list, creating one, its settings and its members.

The team's work on a project (its overview, assignment, the annotator's queue, agreement, adjudication, statistics)
builds on curation and is :mod:`webapp.teamwork`'s, under the same addresses and URL names (webapp.urls).
Views check the project role (webapp.projects.access), parse input with a form, call one service and redirect with a
message that says what happened, or why nothing did.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from webapp.core.decorators import admin_required, curator_required, reader_required
from webapp.corpus.models import Document
from webapp.projects import access, selectors
from webapp.projects.forms import MemberForm, ProjectForm, SettingsForm
from webapp.projects.models import Member, Project
from webapp.projects.services import ProjectError
from webapp.projects.services.membership import add_member, create_project, update_settings
from webapp.projects.services.membership import remove_member as drop_member

# --- list, creation, settings ------------------------------------------------------------------------------


@require_GET
@reader_required
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
    project = access.project_for(request.user, slug, Member.Role.MANAGER)
    initial = {"title": project.title, "description": project.description, "annotators_per_document": project.annotators_per_document,
               "concept_types": project.concept_types.all(), "concept_roots": " ".join(project.concept_roots)}
    form = SettingsForm(request.POST or None, initial=initial, dictionary_id=project.collection.dictionary_id)
    if request.method == "POST" and form.is_valid():
        d = form.cleaned_data
        try:
            update_settings(project, title=d["title"], description=d["description"], annotators_per_document=d["annotators_per_document"],
                            concept_types=list(d["concept_types"]), concept_roots=d["concept_roots"], by=request.user)
        except ProjectError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Settings of “{project}” saved.")
            return redirect("projects:detail", slug=project.slug)
    return render(request, "projects/settings.html", {"project": project, "form": form}, status=400 if form.errors else 200)


# --- members ----------------------------------------------------------------------------------------------


@require_POST
@curator_required
def members(request: HttpRequest, slug: str) -> HttpResponse:
    project = access.project_for(request.user, slug, Member.Role.MANAGER)
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
    project = access.project_for(request.user, slug, Member.Role.MANAGER)
    member = get_object_or_404(Member.objects.select_related("user"), project=project, pk=pk)
    try:
        drop_member(member, by=request.user)
    except ProjectError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{member.user.username} is no longer {member.get_role_display().lower()} of “{project}”.")
    return redirect("projects:detail", slug=slug)
