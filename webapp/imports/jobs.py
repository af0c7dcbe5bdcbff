"""Queue background imports (the row is created in the caller's transaction, the task after commit) and register
the import kind of job (webapp.jobs.kinds).

A file uploaded for an import (``webapp.core.uploads``) lives as long as its job may still read it: it is
removed when the job ends (:func:`import_ended`: succeeded, or failed for good) or when it could not be queued.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.db import transaction
from django.urls import reverse

from webapp.audit import actions
from webapp.audit.events import record
from webapp.core.queue import QueueUnavailable, enqueue, job_task_id
from webapp.core.uploads import discard_upload
from webapp.imports.models import ImportJob
from webapp.jobs import lifecycle
from webapp.jobs.kinds import WORKER_LOST, JobKind, register

RUN_IMPORT = "tasks.imports.run_import"


def queue_import(kind: str, path: str | Path, params: dict[str, Any], user: Any = None,
                 queue: str | None = None) -> ImportJob:
    """A queued import job, its task sent after commit (``queue``: instead of the default queue, e.g. the interactive
    one for a pasted text); :class:`QueueUnavailable` when the broker is unreachable (the job is then failed with the
    reason, and an uploaded file removed)."""
    if kind not in ImportJob.Kind.values:
        raise ValueError(f"unknown import kind {kind!r}; expected one of {', '.join(ImportJob.Kind.values)}")
    job = ImportJob.objects.create(import_kind=kind, path=str(path), params=params,
                                   created_by=user if getattr(user, "pk", None) else None)
    record(actions.IMPORT_STARTED, actor=user, obj=job, label=_subject(job), after=_audited_params(job),
           link=_page(job))
    enqueue(RUN_IMPORT, job.pk, queue=queue, task_id=job_task_id(job), on_failure=lambda exc: _unqueued(job, exc))
    return job


def _unqueued(job: ImportJob, exc: QueueUnavailable) -> None:
    if fail_import(job.pk, str(exc)):
        job.refresh_from_db(fields=["state", "error", "finished_at"])
    import_ended(job.pk)


def finish_import(job_id: int, report: dict[str, Any], done: int, total: int | None) -> bool:
    """The import succeeded: its report kept and its end in the audit log, together (False: it had ended already)."""
    with transaction.atomic():
        ImportJob.objects.filter(pk=job_id).update(report=report, progress=done, progress_total=total)
        if not lifecycle.succeed(job_id):
            return False
        job = ImportJob.objects.get(pk=job_id)
        counts = {k: v for k, v in report.items() if isinstance(v, int) and not isinstance(v, bool)}
        record(actions.IMPORT_FINISHED, actor=job.created_by, obj=job, label=_subject(job), after=counts or None,
               link=_page(job))
        return True


def fail_import(job_id: int, reason: str) -> bool:
    """The import failed with ``reason``, in the audit log in the same transaction (False: it had ended already).
    The job sweep fails one whose worker was lost through here too (its kind's ``fail``)."""
    with transaction.atomic():
        if not lifecycle.fail(job_id, reason):
            return False
        job = ImportJob.objects.get(pk=job_id)
        record(actions.IMPORT_FAILED, actor=job.created_by, obj=job, label=_subject(job),
               after={"error": reason[:500]}, link=_page(job))
        return True


def _page(job: ImportJob) -> str:
    return f"{reverse('import-jobs')}?job={job.pk}"


def _audited_params(job: ImportJob) -> dict[str, Any]:
    return {"kind": job.import_kind, "file": Path(job.path).name,
            **{k: v for k, v in job.params.items() if isinstance(v, str | int | None)}}


def import_ended(job_id: int) -> bool:
    """Remove the uploaded file of an import that has ended (succeeded or failed), unless another unfinished
    import names it too; True when a file was removed. A file of the server's own is never touched."""
    job = ImportJob.objects.filter(pk=job_id).first()
    if job is None or job.is_active:
        return False
    if ImportJob.objects.filter(path=job.path, state__in=ImportJob.UNFINISHED_STATES).exists():
        return False
    return discard_upload(job.path)


def _lost_reason(job: Any) -> str:
    total = f" of {job.progress_total:,}" if job.progress_total else ""
    where = f"after {job.progress:,}{total} records" if job.progress else "before it had read a record"
    resume = (job.result or {}).get("resume")
    if resume and resume.get("position"):
        # PubMed, BioC, JSON Lines and PubAnnotation files commit per batch (webapp.corpus.batch_import): what
        # they committed stays.
        return (f"{WORKER_LOST} {where}; its first {resume['position']:,} items are committed. Import the file again: "
                "it continues from there.")
    return (f"{WORKER_LOST} {where}; nothing of this import was written (an import is one transaction). "
            "Import the file again.")


def _subject(job: Any) -> str:
    name = Path(job.path).name
    return f"{job.get_import_kind_display().lower()} {name} → {job.target}" if job.target else f"{name}"


def register_kind() -> None:
    register(JobKind(
        name=ImportJob.job_kind, label="Import", model=lambda: ImportJob, task=RUN_IMPORT,
        subject=_subject, url=_page, lost_reason=_lost_reason, fail=lambda job, reason: fail_import(job.pk, reason), input_path=lambda job: job.path, ended=lambda job: import_ended(job.pk),
    ))
