"""The adjudication pages of a project: the documents to adjudicate, one document's units side by side, resolving
a unit (or applying what the annotators agreed on), and the concept search for the adjudicator's own choice."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from webapp.core.decorators import curator_required
from webapp.corpus.models import Document
from webapp.curation.selectors import search_version
from webapp.projects import access, selectors
from webapp.projects.concept_filter import filter_for_project
from webapp.projects.models import Member, Project
from webapp.projects.services import ProjectError
from webapp.teamwork.forms import ResolveForm
from webapp.teamwork.services.adjudication import (
    apply_agreed,
    document_units,
    open_disagreements,
    ready_for_adjudication,
)
from webapp.teamwork.services.adjudication import (
    resolve as resolve_unit,
)
from webapp.vocab.models import Concept
from webapp.vocab.selectors import search_concepts


@require_GET
@curator_required
def adjudication_list(request: HttpRequest, slug: str) -> HttpResponse:
    project = access.project_for(request.user, slug, Member.Role.ADJUDICATOR)
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
    project = access.project_for(request.user, slug, Member.Role.ADJUDICATOR)
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
    project = access.project_for(request.user, slug, Member.Role.ADJUDICATOR)
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
    project = access.project_for(request.user, slug, Member.Role.ADJUDICATOR)
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

