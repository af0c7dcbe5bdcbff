"""The Jobs page: every kind of background work in one table, newest first, with its progress and a cancel button;
the table polls itself while a job is queued or running (an htmx fragment of the same page)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseStopPolling

from webapp.core.decorators import admin_required
from webapp.jobs import services
from webapp.jobs.models import Job

JOBS_SHOWN = 100
FRAGMENT = "jobs/job_list.html#jobs"


@require_GET
@admin_required
def job_list(request: HttpRequest) -> HttpResponse:
    """``?kind=`` and ``?state=`` filter; ``?parent=ID`` lists the chunks of one job."""
    kind = request.GET.get("kind", "")
    state = request.GET.get("state", "")
    kind = kind if kind in dict(services.kind_choices()) else ""
    state = state if state in Job.State.values else ""
    parent = request.GET.get("parent", "")
    found = services.jobs(kind, state, int(parent) if parent.isdigit() else None)
    context = {
        "rows": list(services.describe_all(found[:JOBS_SHOWN]).values()),
        "total": found.count(),
        "shown": JOBS_SHOWN,
        "active": found.filter(state__in=Job.UNFINISHED_STATES).exists(),
        "kinds": services.kind_choices(), "states": Job.State.choices, "kind": kind, "state": state,
    }
    if request.htmx and not request.htmx.history_restore_request and request.htmx.target == "jobs":
        if not context["active"]:
            return HttpResponseStopPolling(render_to_string(FRAGMENT, context, request))  # 286: the last table
        return render(request, FRAGMENT, context)
    return render(request, "jobs/job_list.html", context)


@require_POST
@admin_required
def job_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(Job, pk=pk)
    try:
        job = services.cancel(job, request.user)
    except services.CannotCancel as exc:
        messages.error(request, str(exc))
    else:
        said = "cancelled" if job.state == Job.State.CANCELLED else "asked to stop; it stops at its next report"
        messages.success(request, f"Job {job.pk} {said}.")
    return redirect(request.POST.get("next") or reverse("jobs:list"))
