"""Admins' import pages: upload a dictionary, upload documents, add a plain text. Each queues an import job and
redirects to the Imports page, where the new job is highlighted and its progress shown until it ends."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.http import HttpResponseStopPolling

from webapp.core.decorators import admin_required
from webapp.core.queue import QueueUnavailable
from webapp.imports.forms import DictionaryImportForm, DocumentsImportForm, ImportForm, TextImportForm
from webapp.imports.models import ImportJob
from webapp.imports.queueing import ImportRefused, job_rows


def _import_page(request: HttpRequest, form: ImportForm, template: str) -> HttpResponse:
    """The form (GET), or its submission: queued -> the Imports page; refused -> the form again with the reason
    by the field at fault (400), or above the form when the task queue is down (503)."""
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                job = form.submit(request.user)
            except ImportRefused as exc:
                form.add_error(exc.field, str(exc))
            except QueueUnavailable as exc:  # the job is failed with this reason and its file removed
                form.add_error(None, str(exc))
                status = 503
            else:
                # No flash: the Imports page says what became of the highlighted job (queued, then its outcome).
                return redirect(f"{reverse('import-jobs')}?job={job.pk}#import-job-{job.pk}")
    form.focus()
    return render(request, template, {"form": form}, status=status)


def _submitted(request: HttpRequest) -> tuple[Any, Any]:
    """The form's data and files: bound on a POST, even an empty one (its errors are then shown)."""
    return (request.POST, request.FILES) if request.method == "POST" else (None, None)


@require_http_methods(["GET", "POST"])
@admin_required
def dictionary_import(request: HttpRequest) -> HttpResponse:
    # ?dictionary=SLUG: "a new release of this dictionary", from its page.
    form = DictionaryImportForm(*_submitted(request), initial=request.GET.dict())
    return _import_page(request, form, "core/import_dictionary.html")


@require_http_methods(["GET", "POST"])
@admin_required
def documents_import(request: HttpRequest) -> HttpResponse:
    # ?collection=SLUG: "documents into this collection", from its page.
    form = DocumentsImportForm(*_submitted(request), initial=request.GET.dict())
    return _import_page(request, form, "core/import_documents.html")


@require_http_methods(["GET", "POST"])
@admin_required
def text_import(request: HttpRequest) -> HttpResponse:
    form = TextImportForm(*_submitted(request), initial=request.GET.dict())
    return _import_page(request, form, "core/import_text.html")


IMPORT_JOBS_SHOWN = 100


@require_GET
@admin_required
def import_jobs(request: HttpRequest) -> HttpResponse:
    """Import jobs, newest first; the table polls itself while a job is queued or running. ``?job=ID`` highlights
    the job an admin has just queued (the import forms redirect here)."""
    jobs = ImportJob.objects.select_related("created_by")[:IMPORT_JOBS_SHOWN]
    context = {
        "rows": job_rows(jobs, timezone.now(), highlight=_int_or_none(request.GET.get("job"))),
        "active": ImportJob.objects.filter(state__in=ImportJob.UNFINISHED_STATES).exists(),
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
