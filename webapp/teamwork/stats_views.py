"""Curator statistics pages: a project's members (its managers and adjudicators see everyone, an annotator only
themselves) and every curator of the workbench (admins). The figures are :mod:`webapp.teamwork.stats`."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from webapp.core.decorators import admin_required
from webapp.projects.access import can_view_project, has_role
from webapp.projects.models import Member, Project
from webapp.teamwork import stats


def _definitions() -> dict[str, int]:
    """What the "how these are computed" notes quote, so they say what the code does."""
    return {"idle_cutoff_minutes": int(stats.IDLE_CUTOFF.total_seconds() // 60),
            "min_active_seconds": int(stats.MIN_ACTIVE_FOR_RATE.total_seconds())}


@require_GET
def project_stats(request: HttpRequest, slug: str) -> HttpResponse:
    project = get_object_or_404(Project.objects.select_related("collection"), slug=slug)
    if not can_view_project(request.user, project):
        raise PermissionDenied(f"The statistics of project “{project}” are for its members.")
    # Double annotation is blind and the pace of colleagues is theirs: an annotator sees their own row only.
    sees_all = has_role(request.user, project, Member.Role.MANAGER, Member.Role.ADJUDICATOR)
    figures = stats.project_stats(project, None if sees_all else request.user.pk)
    return render(request, "projects/stats.html", {"project": project, "stats": figures, "sees_all": sees_all, **_definitions()})


@require_GET
@admin_required
def curator_stats(request: HttpRequest) -> HttpResponse:
    return render(request, "projects/curator_stats.html", {"stats": stats.curator_stats(), **_definitions()})
