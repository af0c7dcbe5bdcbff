"""Admins' import pages: upload a dictionary, upload documents, add a plain text. Each queues an import job and
redirects to the Imports page, where the new job is highlighted and its progress shown until it ends."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from webapp.core.decorators import admin_required
from webapp.core.forms import DictionaryImportForm, DocumentsImportForm, ImportForm, TextImportForm
from webapp.core.imports import ImportRefused
from webapp.core.queue import QueueUnavailable


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
