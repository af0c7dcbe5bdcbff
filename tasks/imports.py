"""Imports run by a worker: dictionaries and documents, one import job (webapp.imports.models.ImportJob) each."""

from __future__ import annotations

import dataclasses
import logging
import socket
from typing import Any

from celery import shared_task

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
    from webapp.jobs.lease import JobLease

    # The lease is held for the whole import: if this process dies, the job is failed at once by the job sweep
    # (webapp.jobs.sweep) instead of saying "running" for ever.
    with JobLease(job_id) as lease:
        if not lease.held:
            logger.warning("import %s: another worker runs it (or the sweep is failing it); left to it", job_id)
            return "taken"
        return _run_leased(job_id)


def _run_leased(job_id: int) -> str:
    from webapp.artifacts.local import ensure_local
    from webapp.imports.jobs import fail_import, finish_import
    from webapp.imports.models import ImportJob
    from webapp.jobs import lifecycle
    from webapp.jobs.progress import ProgressRecorder

    if not lifecycle.take(job_id, worker=socket.gethostname()):
        # Re-delivered after it ended: after success, or after the sweep failed it when its worker was lost.
        return ImportJob.objects.get(pk=job_id).state
    job = ImportJob.objects.get(pk=job_id)
    # The recorder writes through a connection of its own: progress is seen while the import's
    # transaction is still open, at most once a second.
    with ProgressRecorder(job_id, every=PROGRESS_EVERY_S) as progress:
        try:
            # The file as this host has it: fetched from the artifact store when a web host elsewhere stored it.
            report = _run(job.import_kind, str(ensure_local(job.path)), job.params, job.created_by, progress, job_id)
        except (ParseError, FileNotFoundError, ValueError) as exc:
            fail_import(job_id, str(exc))
            logger.warning("import %s failed: %s", job_id, exc)
            return ImportJob.State.FAILED
    finish_import(job_id, report, progress.done, progress.total)
    return ImportJob.State.SUCCEEDED


def _run(kind: str, path: str, params: dict[str, Any], user: Any, progress: Any, job_id: int | None = None) -> dict[str, Any]:
    from webapp.core.public import public_data
    from webapp.corpus.formats.services import import_documents
    from webapp.vocab.importers import import_dictionary

    report: Any  # a dictionary or a document ImportReport, both dataclasses
    if kind == "dictionary":
        report = import_dictionary(path, user=user, progress=progress, **params)
    elif kind == "documents":
        params = dict(params)
        fmt = params.pop("format", None) or "pubtator"  # jobs queued before formats existed are PubTator
        # The job's id: a PubMed file records on it how far it has committed, for a later import to continue from.
        report = import_documents(path, fmt, progress=progress, job_id=job_id, **params)
    else:
        raise ValueError(f"unknown import kind {kind!r}")
    # The report's message and warnings quote the file, by the path the worker read: shown by its name.
    return public_data(_jsonable(dataclasses.asdict(report)))


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)
