"""What a locked-out login sees (django-axes calls :func:`lockout_response`, see ``AXES_LOCKOUT_CALLABLE``)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

LOCKED_OUT_STATUS = 429
# django-axes keeps the username of each failure in a 255-character column, and Django's login form does not
# enforce the username's length before authenticating: a longer one was a DataError, a 500.
AXES_USERNAME_MAX = 255


def lockout_username(request: HttpRequest, credentials: dict[str, Any] | None = None) -> str | None:
    """The username a failure counts against (``AXES_USERNAME_CALLABLE``): as given, cut to what axes stores
    (no real username is that long) and without NUL characters, which PostgreSQL refuses."""
    field = settings.AXES_USERNAME_FORM_FIELD
    if credentials:
        username = credentials.get(field)
    else:
        username = getattr(request, "data", request.POST).get(field)
    if not isinstance(username, str):
        return None
    return username.replace("\x00", "")[:AXES_USERNAME_MAX]


def lockout_message() -> str:
    # From axes' own settings (which LOGIN_FAILURE_LIMIT and LOGIN_LOCKOUT_MINUTES set), so the page tells what is enforced.
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    return (
        f"Too many failed logins ({settings.AXES_FAILURE_LIMIT}) for this username from your address: "
        f"logging in is locked for {minutes} minutes. Try again later, or reset your password."
    )


def lockout_response(request: HttpRequest, original_response: HttpResponse | None = None, credentials: Any = None) -> HttpResponse:
    """The login page again, with the lockout message instead of the form's error (JSON under /api/)."""
    if request.path_info.startswith("/api/"):
        return JsonResponse({"detail": lockout_message()}, status=LOCKED_OUT_STATUS)
    username = request.POST.get("username", "") if request.method == "POST" else ""
    context = {
        "form": AuthenticationForm(request, initial={"username": username}),
        "locked_out": lockout_message(),
        "next": request.POST.get("next", "") if request.method == "POST" else request.GET.get("next", ""),
    }
    return render(request, "registration/login.html", context, status=LOCKED_OUT_STATUS)
