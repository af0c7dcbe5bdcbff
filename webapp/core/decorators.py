"""Role checks for browser views (the API uses webapp.api.permissions).

Login itself is enforced for every page by LoginRequiredMiddleware; these decorators add the role on top, so
an account without a role (charlie in the tests) gets 403 rather than the data.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponseBase

from webapp.core.roles import is_admin, is_curator

View = TypeVar("View", bound=Callable[..., HttpResponseBase])


def _requires(check: Callable[[Any], bool], role: str) -> Callable[[View], View]:
    def decorator(view: View) -> View:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            if not check(request.user):
                raise PermissionDenied(f"This page needs the {role} role.")
            return view(request, *args, **kwargs)

        return wrapped  # type: ignore[return-value]

    return decorator


curator_required = _requires(is_curator, "curator")
admin_required = _requires(is_admin, "admin")
