"""Imports run by a worker: dictionaries and documents, one ImportJob row per import."""

from __future__ import annotations

import dataclasses
import logging
import socket
import time
from typing import Any

from celery import shared_task
from django.db import transaction
from django.utils import timezone

from linker.data import ParseError
from tasks import RETRY_OPTIONS

logger = logging.getLogger(__name__)

PROGRESS_EVERY_S = 1.0


@shared_task(
    name="tasks.imports.run_import",
    acks_late=True,
    reject_on_worker_lost=True,
    **RETRY_OPTIONS,  # a database restart mid-import: the import's transaction rolled back, run it again
)
def run_import(job_id: int) -> str:
    from webapp.core.models import ImportJob

    with transaction.atomic():
        job = ImportJob.objects.select_for_update().get(pk=job_id)
        if job.state == ImportJob.State.SUCCEEDED:
            return job.state  # re-delivered after success: nothing to do
        job.state = ImportJob.State.RUNNING
        job.started_at = timezone.now()
        job.worker = socket.gethostname()
        job.message = ""
        job.save(update_fields=["state", "started_at", "worker", "message"])

    last = [0.0]

    def progress(done: int, total: int | None = None) -> None:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_EVERY_S:
            last[0] = now
            # Outside the import's transaction (a separate connection would be needed to be visible):
            # the row update is cheap and shows liveness; readers see it once the import commits.
            ImportJob.objects.filter(pk=job_id).update(progress=done)

    try:
        report = _run(job.kind, job.path, job.params, job.created_by, progress)
    except (ParseError, FileNotFoundError, ValueError) as exc:
        ImportJob.objects.filter(pk=job_id).update(
            state=ImportJob.State.FAILED, message=str(exc), finished_at=timezone.now()
        )
        logger.warning("import %s failed: %s", job_id, exc)
        return ImportJob.State.FAILED
    ImportJob.objects.filter(pk=job_id).update(
        state=ImportJob.State.SUCCEEDED, report=report, finished_at=timezone.now()
    )
    return ImportJob.State.SUCCEEDED


def _run(kind: str, path: str, params: dict[str, Any], user: Any, progress: Any) -> dict[str, Any]:
    from webapp.corpus.importers import import_pubtator
    from webapp.vocab.importers import import_dictionary

    if kind == "dictionary":
        report = import_dictionary(path, user=user, progress=progress, **params)
    elif kind == "documents":
        report = import_pubtator(path, progress=progress, **params)
    else:
        raise ValueError(f"unknown import kind {kind!r}")
    return _jsonable(dataclasses.asdict(report))


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)
