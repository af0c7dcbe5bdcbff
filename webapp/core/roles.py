"""The two roles of the workbench, as Django groups created by a migration."""

from __future__ import annotations

from typing import Any

CURATOR = "curator"
ADMIN = "admin"
ROLES = (CURATOR, ADMIN)


def _group_names(user: Any) -> frozenset[str]:
    # Cached on the user object: a page asks several times (context processor, decorators, templates)
    # and the user object lives for exactly one request.
    names = getattr(user, "_workbench_groups", None)
    if names is None:
        names = frozenset(user.groups.values_list("name", flat=True))
        user._workbench_groups = names
    return names


def is_admin(user: Any) -> bool:
    """Workbench admins: members of the ``admin`` group, or Django superusers."""
    return bool(user.is_authenticated and (user.is_superuser or ADMIN in _group_names(user)))


def is_curator(user: Any) -> bool:
    """Curators can read and decide; admins can do everything a curator can."""
    return bool(user.is_authenticated and (is_admin(user) or CURATOR in _group_names(user)))
