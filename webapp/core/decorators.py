"""Role checks for browser views (the API uses webapp.api.permissions).

Login itself is enforced for every page by LoginRequiredMiddleware; these decorators add the role on top, so
an account without a role (charlie in the tests) gets 403 rather than the data. Pages that only read take
:func:`reader_required` (viewers too); everything that writes takes :func:`curator_required` or
:func:`admin_required`, so a viewer's write is refused with a message naming the missing role.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponseBase

from webapp.core.roles import VIEWER_WRITE_REFUSAL, can_read, is_admin, is_curator, is_viewer_only

View = TypeVar("View", bound=Callable[..., HttpResponseBase])


def _refusal(user: Any, role: str) -> str:
    if role == "curator" and is_viewer_only(user):
        return VIEWER_WRITE_REFUSAL
    return f"This page needs the {role} role."


def _requires(check: Callable[[Any], bool], role: str) -> Callable[[View], View]:
    def decorator(view: View) -> View:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            if not check(request.user):
                raise PermissionDenied(_refusal(request.user, role))
            return view(request, *args, **kwargs)

        return wrapped  # type: ignore[return-value]

    return decorator


reader_required = _requires(can_read, "viewer, curator or admin")
curator_required = _requires(is_curator, "curator")
admin_required = _requires(is_admin, "admin")
