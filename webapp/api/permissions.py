"""Who may call what in the API: viewers, curators and admins read; curators decide; admins do the rest.

A viewer's write gets 403 with a message naming the role it lacks (webapp.core.roles.VIEWER_WRITE_REFUSAL);
a read-only token's write is refused before these run (webapp.api.authentication).
"""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import SAFE_METHODS, BasePermission

from webapp.core.roles import VIEWER_WRITE_REFUSAL, can_read, is_admin, is_curator, is_viewer_only


class IsCurator(BasePermission):
    """Viewers, curators and admins read; anything that writes needs an admin unless a view says otherwise."""

    message = "This needs the viewer, curator or admin role."

    def has_permission(self, request: Any, view: Any) -> bool:
        if not can_read(request.user):
            return False
        if request.method in SAFE_METHODS or is_admin(request.user):
            return True
        self.message = VIEWER_WRITE_REFUSAL if is_viewer_only(request.user) else "This needs the admin role."
        return False


class IsAdmin(BasePermission):
    message = "This needs the admin role."

    def has_permission(self, request: Any, view: Any) -> bool:
        return is_admin(request.user)


class IsCuratorForAll(BasePermission):
    """Curators (and admins) for every method: recording decisions and POST /api/link write nothing an admin owns.
    A viewer reads what they read (GET) but may not POST."""

    message = "This needs the curator or admin role."

    def has_permission(self, request: Any, view: Any) -> bool:
        if is_curator(request.user):
            return True
        if request.method in SAFE_METHODS and can_read(request.user):
            return True
        if is_viewer_only(request.user):
            self.message = VIEWER_WRITE_REFUSAL
        return False
