"""Logins, failed logins and logouts in the audit log (Django's auth signals, connected in AuditConfig.ready)."""

from __future__ import annotations

from typing import Any

from webapp.audit import actions
from webapp.audit.events import record


def logged_in(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    record(actions.LOGIN_SUCCEEDED, actor=user, obj=user, request=request)


def login_failed(sender: Any, credentials: dict[str, Any], request: Any = None, **kwargs: Any) -> None:
    # Only the name tried is kept: Django hides the password in ``credentials`` already, and no other field is needed.
    username = str(credentials.get("username") or "")[:150]
    record(actions.LOGIN_FAILED, object_type="user", label=username, after={"username": username}, request=request,
           actor=None)


def logged_out(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    if user is not None:
        record(actions.LOGOUT, actor=user, obj=user, request=request)
