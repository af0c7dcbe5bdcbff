"""The audit log's retention: events older than ``AUDIT_RETENTION_DAYS`` are removed once a day on the beat
schedule (webapp.celery), by the one sweep allowed to delete them (webapp.audit.retention)."""

from __future__ import annotations

from celery import shared_task

from tasks import RETRY_OPTIONS


@shared_task(name="tasks.audit.sweep_audit_log", ignore_result=True, **RETRY_OPTIONS)
def sweep_audit_log() -> int:
    """Remove the events past the retention period; how many went."""
    from webapp.audit.retention import sweep

    return sweep()
