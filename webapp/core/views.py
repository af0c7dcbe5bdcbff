from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from webapp.core.health import run_checks
from webapp.corpus.models import Collection, Document, Mention
from webapp.vocab.models import Dictionary


@require_GET
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    """Open to anonymous callers (load balancers); says only what is up, never configuration secrets."""
    checks = run_checks()
    ok = all(c.ok for c in checks)
    body = {"status": "ok" if ok else "fail", "checks": {c.name: {"ok": c.ok, "ms": c.ms} | ({} if c.ok else {"error": c.detail}) for c in checks}}
    return JsonResponse(body, status=200 if ok else 503)


def home(request: HttpRequest) -> HttpResponse:
    context = {
        "dictionaries": Dictionary.objects.order_by("slug"),
        "collections": Collection.objects.order_by("slug"),
        "document_count": Document.objects.count(),
        "mention_count": Mention.objects.count(),
    }
    return render(request, "core/home.html", context)
