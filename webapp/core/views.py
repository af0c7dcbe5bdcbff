from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from django_htmx.http import HttpResponseStopPolling

from webapp.core.decorators import admin_required
from webapp.core.health import cached_checks
from webapp.core.imports import job_rows
from webapp.core.models import ImportJob


@require_GET
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    """Open to anonymous callers (load balancers); says only what is up, never configuration secrets.
    Answered from a cache a few seconds old (HEALTHZ_CACHE_SECONDS), so that probes cannot crowd out pages."""
    checks = cached_checks()
    ok = all(c.ok for c in checks)
    body = {"status": "ok" if ok else "fail", "checks": {c.name: {"ok": c.ok, "ms": c.ms} | ({} if c.ok else {"error": c.detail}) for c in checks}}
    return JsonResponse(body, status=200 if ok else 503)


IMPORT_JOBS_SHOWN = 100


@require_GET
@admin_required
def import_jobs(request: HttpRequest) -> HttpResponse:
    """Import jobs, newest first; the table polls itself while a job is queued or running. ``?job=ID`` highlights
    the job an admin has just queued (the import forms redirect here)."""
    jobs = ImportJob.objects.select_related("created_by")[:IMPORT_JOBS_SHOWN]
    context = {
        "rows": job_rows(jobs, timezone.now(), highlight=_int_or_none(request.GET.get("job"))),
        "active": ImportJob.objects.filter(state__in=[ImportJob.State.QUEUED, ImportJob.State.RUNNING]).exists(),
    }
    if request.htmx and not request.htmx.history_restore_request and request.htmx.target == "import-jobs":
        fragment = "core/import_list.html#import-jobs"
        if not context["active"]:
            # 286: htmx swaps in this last table and stops polling.
            return HttpResponseStopPolling(render_to_string(fragment, context, request))
        return render(request, fragment, context)
    return render(request, "core/import_list.html", context)


def _int_or_none(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() else None
