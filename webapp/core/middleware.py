"""Login required everywhere except the login and password-reset pages, single sign-on's start and callback, the
health check, the metrics (their own check), static files and the API.

The API is left to DRF's own authentication and permission classes so that anonymous API requests get
401/403 (a pipeline must not receive an HTML login page), while browser pages redirect to login.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse

# Password reset is for those who cannot log in: its form, the "mail sent" page, the link from the mail
# (/accounts/reset/<uid>/<token>/) and the "done" page. Changing a password (password_change) stays behind login.
# /metrics checks its own bearer token or admin session (webapp.ops.metrics_view): a scraper gets 401, not a login page.
OPEN_PATHS = ("/accounts/login/", "/healthz", "/metrics", "/accounts/password_reset/", "/accounts/password_reset/done/")
# /oidc/: single sign-on's start and the provider's callback (webapp.sso), reached before anyone is logged in.
OPEN_PREFIXES = ("/static/", "/api/", "/accounts/reset/", "/oidc/")


class LoginRequiredMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        path = request.path_info
        if request.user.is_authenticated or path in OPEN_PATHS or path.startswith(OPEN_PREFIXES):
            return self.get_response(request)
        # The admin too: one login page for the whole workbench, not Django admin's own.
        return redirect_to_login(request.get_full_path(), settings.LOGIN_URL)
