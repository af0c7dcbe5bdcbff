"""How a write records its audit event: :func:`record`, in the write's own transaction (it commits or rolls back
with the change it tells of)."""

from __future__ import annotations

from typing import Any

from django.db import models

from webapp.audit.models import AuditEvent

__all__ = ["record"]

_LABEL = AuditEvent._meta.get_field("object_label").max_length or 255


def record(action: str, *, actor: Any = None, obj: models.Model | None = None, object_type: str = "",
           object_id: Any = "", label: str = "", before: Any = None, after: Any = None, link: str = "",
           request: Any = None) -> AuditEvent:
    """Append one event. ``obj``: the model row changed (its kind, id and str() are taken unless given);
    ``actor``: the user (an anonymous user or None is the system; ``request.user`` when a request is given);
    ``before``/``after``: short JSON-able accounts of what changed (a few fields, not whole rows)."""
    if actor is None and request is not None:
        actor = getattr(request, "user", None)
    if actor is not None and not getattr(actor, "is_authenticated", False):
        actor = None
    if obj is not None:
        object_type = object_type or obj._meta.model_name or ""
        object_id = object_id if object_id != "" else obj.pk
        label = label or str(obj)
    return AuditEvent.objects.create(
        actor=actor, actor_name=actor.get_username() if actor is not None else "", action=action,
        object_type=object_type, object_id="" if object_id is None else str(object_id), object_label=label[:_LABEL],
        before=before, after=after, link=link, address=_address(request),
    )


def _address(request: Any) -> str | None:
    if request is None:
        return None
    meta = getattr(request, "META", {})
    return meta.get("REMOTE_ADDR") or None
