"""Queue background imports: the row is created in the caller's transaction, the task after commit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.utils import timezone

from webapp.core.models import ImportJob
from webapp.core.queue import QueueUnavailable, enqueue


def queue_import(kind: str, path: str | Path, params: dict[str, Any], user: Any = None) -> ImportJob:
    if kind not in ImportJob.Kind.values:
        raise ValueError(f"unknown import kind {kind!r}; expected one of {', '.join(ImportJob.Kind.values)}")
    job = ImportJob.objects.create(kind=kind, path=str(path), params=params, created_by=user)
    enqueue("tasks.imports.run_import", job.pk, on_failure=lambda exc: _unqueued(job.pk, exc))
    return job


def _unqueued(job_id: int, exc: QueueUnavailable) -> None:
    ImportJob.objects.filter(pk=job_id, state=ImportJob.State.QUEUED).update(
        state=ImportJob.State.FAILED, message=str(exc), finished_at=timezone.now()
    )
