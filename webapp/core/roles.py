"""The two roles of the workbench, as Django groups created by a migration."""

from __future__ import annotations

from typing import Any

CURATOR = "curator"
ADMIN = "admin"
ROLES = (CURATOR, ADMIN)


def is_admin(user: Any) -> bool:
    """Workbench admins: members of the ``admin`` group, or Django superusers."""
    return bool(user.is_authenticated and (user.is_superuser or user.groups.filter(name=ADMIN).exists()))


def is_curator(user: Any) -> bool:
    """Curators can read and decide; admins can do everything a curator can."""
    return bool(user.is_authenticated and (is_admin(user) or user.groups.filter(name=CURATOR).exists()))
