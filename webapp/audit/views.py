"""The audit page (admins): the events newest first, filtered and paginated, and the same events as JSON Lines."""

from __future__ import annotations

import json
from typing import Any

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseBase, StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.http import urlencode
from django.views.decorators.http import require_GET

from webapp.audit.export import jsonl_lines
from webapp.audit.query import SYSTEM, AuditFilter, AuditFilterForm, action_choices, events, object_types
from webapp.core.decorators import admin_required

PER_PAGE = 50


def _filter(request: HttpRequest) -> tuple[AuditFilterForm, AuditFilter]:
    form = AuditFilterForm(request.GET)
    # A filter that is not valid (a date that is not one) filters nothing and says so on the form.
    return form, AuditFilter.of(form.cleaned_data) if form.is_valid() else AuditFilter()


@require_GET
@admin_required
def event_list(request: HttpRequest) -> HttpResponse:
    form, chosen = _filter(request)
    page = Paginator(events(chosen), PER_PAGE).get_page(request.GET.get("page"))
    query = urlencode(chosen.query())
    return render(request, "audit/event_list.html", {
        "form": form, "chosen": chosen, "page": page, "page_query": query, "system": SYSTEM,
        "rows": [(event, _shown(event.before), _shown(event.after)) for event in page],
        "actions": action_choices(), "object_types": object_types(), "export_query": query,
    }, status=400 if form.errors else 200)


def _shown(value: Any) -> str:
    """A before/after as one short line of JSON ("" for none)."""
    return "" if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)


@require_GET
@admin_required
def export_jsonl(request: HttpRequest) -> HttpResponseBase:
    form, chosen = _filter(request)
    if form.errors:
        return HttpResponse(f"The filters are not valid: {AuditFilter.problems(form)}\n", status=400,
                            content_type="text/plain")
    response = StreamingHttpResponse(jsonl_lines(events(chosen)), content_type="application/x-ndjson; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="audit-{timezone.now():%Y%m%d-%H%M%S}.jsonl"'
    return response
