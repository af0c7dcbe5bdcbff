from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from webapp.core.roles import can_read, is_admin, is_curator


def roles(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"is_admin": False, "is_curator": False, "can_read": False}
    return {"is_admin": is_admin(user), "is_curator": is_curator(user), "can_read": can_read(user)}
