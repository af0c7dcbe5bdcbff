from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from webapp.core.health import cached_checks


@require_GET
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    """Open to anonymous callers (load balancers); says only what is up, never configuration secrets.
    Answered from a cache a few seconds old (HEALTHZ_CACHE_SECONDS), so that probes cannot crowd out pages."""
    checks = cached_checks()
    ok = all(c.ok for c in checks)
    body = {"status": "ok" if ok else "fail", "checks": {c.name: {"ok": c.ok, "ms": c.ms} | ({} if c.ok else {"error": c.detail}) for c in checks}}
    return JsonResponse(body, status=200 if ok else 503)
