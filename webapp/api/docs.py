"""The API's documentation pages, served from this host alone.

Their scripts come from drf-spectacular-sidecar (settings: ``REDOC_DIST``, ``SWAGGER_UI_DIST``) and the Google fonts
of drf-spectacular's ReDoc template are left out (``templates/drf_spectacular/redoc.html``), but ReDoc's bundle
still draws its "API docs by Redocly" logo from cdn.redoc.ly. A Content-Security-Policy keeps every request of these
pages on this host: the browser does not make the others (ReDoc hides the logo it could not load).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from drf_spectacular.views import SpectacularRedocView, SpectacularSwaggerView

# Inline scripts and styles: the pages' own initialisation and the styles the bundles inject. ReDoc's search runs in
# a worker made from a blob: URL; Swagger UI draws its icons as data: URLs.
DOCS_CSP = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self' 'unsafe-inline'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "font-src 'self' data:",
        "connect-src 'self'",
        "worker-src 'self' blob:",
        "frame-ancestors 'self'",
    ]
)


class _LocalOnly:
    schema = None  # a page, not an operation of the API

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response: HttpResponse = super().get(request, *args, **kwargs)  # type: ignore[misc]
        response["Content-Security-Policy"] = DOCS_CSP
        return response


class RedocView(_LocalOnly, SpectacularRedocView):
    """ReDoc, from drf-spectacular-sidecar, with no request to another host."""


class SwaggerView(_LocalOnly, SpectacularSwaggerView):
    """Swagger UI, from drf-spectacular-sidecar, with no request to another host."""
