"""``GET /metrics``: the Prometheus exposition, never public. A scraper sends ``Authorization: Bearer <token>`` with
the token of the ``METRICS_TOKEN`` setting; a signed-in admin may open it in a browser. Anyone else is refused:
401 without credentials (a scraper must not be sent to the login page, so LoginRequiredMiddleware lets the path
through to this check), 403 with a wrong token or a user who is not an admin.
"""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache

from webapp.core.metrics import exposition
from webapp.core.roles import is_admin
from webapp.ops.metrics import WorkbenchCollector

BEARER = "bearer "


def refusal(request: HttpRequest) -> HttpResponse | None:
    """The answer to a request that may not read the metrics, or None when it may."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if header.lower().startswith(BEARER):
        expected = settings.METRICS_TOKEN
        given = header[len(BEARER):].strip()
        if expected and hmac.compare_digest(given.encode(), expected.encode()):
            return None
        reason = "the bearer token is not METRICS_TOKEN" if expected else "METRICS_TOKEN is not set on this server"
        return HttpResponse(f"Refused: {reason}.\n", status=403, content_type="text/plain")
    if is_admin(request.user):
        return None
    if request.user.is_authenticated:
        return HttpResponse("Refused: the metrics are for admins and for a scraper with METRICS_TOKEN.\n",
                            status=403, content_type="text/plain")
    response = HttpResponse("The metrics need 'Authorization: Bearer <METRICS_TOKEN>' or an admin's session.\n",
                            status=401, content_type="text/plain")
    response["WWW-Authenticate"] = 'Bearer realm="metrics"'
    return response


@never_cache
def metrics(request: HttpRequest) -> HttpResponse:
    refused = refusal(request)  # before the method: an outsider learns nothing of the route
    if refused is not None:
        return refused
    if request.method not in ("GET", "HEAD"):
        response = HttpResponse("Only GET reads the metrics.\n", status=405, content_type="text/plain")
        response["Allow"] = "GET, HEAD"
        return response
    body, content_type = exposition([WorkbenchCollector()])
    return HttpResponse(body, content_type=content_type)
