"""The three roles of the workbench, as Django groups created by migrations.

- **viewer**: reads what a curator reads; every write is refused.
- **curator**: reads and decides.
- **admin**: everything (Django superusers count as admins).
"""

from __future__ import annotations

from typing import Any

VIEWER = "viewer"
CURATOR = "curator"
ADMIN = "admin"
ROLES = (VIEWER, CURATOR, ADMIN)

# What a page says when a viewer tries to write: the role that is missing, and why the account lacks it.
VIEWER_WRITE_REFUSAL = "This needs the curator role; a viewer account may read but not change anything."


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
    """Curators can read and decide; admins can do everything a curator can. A viewer is not a curator: this is
    the check every write makes."""
    return bool(user.is_authenticated and (is_admin(user) or CURATOR in _group_names(user)))


def can_read(user: Any) -> bool:
    """Viewers, curators and admins read the curators' pages and API; only curators and admins write."""
    return bool(user.is_authenticated and (is_curator(user) or VIEWER in _group_names(user)))


def is_viewer_only(user: Any) -> bool:
    """A viewer and nothing more: its writes are refused with :data:`VIEWER_WRITE_REFUSAL`."""
    return can_read(user) and not is_curator(user)


def role_of(user: Any) -> str:
    """The highest workbench role of the user ("" when none), as the users page shows it."""
    if is_admin(user):
        return ADMIN
    if is_curator(user):
        return CURATOR
    return VIEWER if can_read(user) else ""
