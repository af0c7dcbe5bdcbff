"""The audit log's retention: events older than ``settings.AUDIT_RETENTION_DAYS`` (0: kept for ever) are removed.

This sweep is the only way an event leaves: the table's trigger refuses every DELETE unless the transaction says it
is this sweep (``SET LOCAL workbench.audit_retention = 'on'``, which ends with the transaction). It runs once a day
on the beat schedule (``tasks.audit.sweep_audit_log``) and deletes in batches, each its own short transaction, so
that a first sweep over years of events holds no long lock. What it removed is itself recorded (``audit.pruned``).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from webapp.audit import actions
from webapp.audit.events import record
from webapp.audit.models import AuditEvent

BATCH = 10_000


def cutoff(days: int | None = None, now: datetime | None = None) -> datetime | None:
    """Events before this moment are past the retention period; None when every event is kept."""
    days = settings.AUDIT_RETENTION_DAYS if days is None else days
    if days <= 0:
        return None
    return (now or timezone.now()) - timedelta(days=days)


def sweep(days: int | None = None, now: datetime | None = None, batch: int = BATCH) -> int:
    """Remove the events older than ``days`` (default: the setting); returns how many went."""
    before = cutoff(days, now)
    if before is None:
        return 0
    removed = 0
    while True:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL workbench.audit_retention = 'on'")
            pks = list(AuditEvent.objects.filter(at__lt=before).order_by("pk").values_list("pk", flat=True)[:batch])
            if pks:
                removed += AuditEvent.objects.filter(pk__in=pks).delete()[0]
        if len(pks) < batch:
            break
    if removed:
        record(actions.AUDIT_PRUNED, object_type="auditevent", label=f"{removed} events before {before:%Y-%m-%d}",
               after={"removed": removed, "before": before.isoformat(), "retention_days": days
                      if days is not None else settings.AUDIT_RETENTION_DAYS})
    return removed
