from __future__ import annotations

from typing import Any

from rest_framework.permissions import SAFE_METHODS, BasePermission

from webapp.core.roles import is_admin, is_curator


class IsCurator(BasePermission):
    """Curators (and admins) read; anything that writes needs an admin unless a view says otherwise."""

    message = "This needs the curator or admin role."

    def has_permission(self, request: Any, view: Any) -> bool:
        if not is_curator(request.user):
            return False
        return request.method in SAFE_METHODS or is_admin(request.user)


class IsAdmin(BasePermission):
    message = "This needs the admin role."

    def has_permission(self, request: Any, view: Any) -> bool:
        return is_admin(request.user)


class IsCuratorForAll(BasePermission):
    """Curators (and admins) for every method: recording decisions and POST /api/link write nothing an admin owns."""

    message = "This needs the curator or admin role."

    def has_permission(self, request: Any, view: Any) -> bool:
        return is_curator(request.user)
