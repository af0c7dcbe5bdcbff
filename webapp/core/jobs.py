"""Queue background imports: the row is created in the caller's transaction, the task after commit.

A file uploaded for an import (``webapp.core.uploads``) lives as long as its job may still read it: it is
removed when the job ends (:func:`import_ended`: succeeded, or failed for good) or when it could not be queued.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.utils import timezone

from webapp.core.models import ImportJob
from webapp.core.queue import QueueUnavailable, enqueue, job_task_id
from webapp.core.uploads import discard_upload

RUN_IMPORT = "tasks.imports.run_import"


def queue_import(kind: str, path: str | Path, params: dict[str, Any], user: Any = None,
                 queue: str | None = None) -> ImportJob:
    """A queued import job, its task sent after commit (``queue``: instead of the default queue, e.g. the interactive
    one for a pasted text); :class:`QueueUnavailable` when the broker is unreachable (the job is then failed with the
    reason, and an uploaded file removed)."""
    if kind not in ImportJob.Kind.values:
        raise ValueError(f"unknown import kind {kind!r}; expected one of {', '.join(ImportJob.Kind.values)}")
    job = ImportJob.objects.create(kind=kind, path=str(path), params=params, created_by=user)
    enqueue(RUN_IMPORT, job.pk, queue=queue, task_id=job_task_id(job), on_failure=lambda exc: _unqueued(job, exc))
    return job


def _unqueued(job: ImportJob, exc: QueueUnavailable) -> None:
    now = timezone.now()
    if ImportJob.objects.filter(pk=job.pk, state=ImportJob.State.QUEUED).update(
        state=ImportJob.State.FAILED, message=str(exc), finished_at=now
    ):
        job.state, job.message, job.finished_at = ImportJob.State.FAILED, str(exc), now
    import_ended(job.pk)


def import_ended(job_id: int) -> bool:
    """Remove the uploaded file of an import that has ended (succeeded or failed), unless another unfinished
    import names it too; True when a file was removed. A file of the server's own is never touched."""
    job = ImportJob.objects.filter(pk=job_id).first()
    if job is None or job.is_active:
        return False
    if ImportJob.objects.filter(path=job.path, state__in=(ImportJob.State.QUEUED, ImportJob.State.RUNNING)).exists():
        return False
    return discard_upload(job.path)
