"""The sweep of queued jobs: a job left queued whose task message the broker no longer holds is queued again.

A message is lost when Redis restarts without persistence, or when the web process dies between committing a
job's row and publishing its task. Nothing would ever run such a job. Every job kind with a queued state is
listed in :data:`KINDS`; a job is swept when it has been queued longer than ``QUEUED_JOB_SWEEP_AFTER_S``, no
worker has taken it (its state says so; an index version, which has no such state, by its build lock), and the
broker holds no message with its task id (:func:`webapp.core.queue.job_task_id`), neither waiting in a queue
nor delivered to a worker. A job waiting its turn behind a long run is left alone. It is queued again under the
same task id, on its task's route (or ``TASK_QUEUE_OVERRIDE``), with the reason recorded on the job; one whose
input is gone (a word-vector upload's file) is failed with the reason instead.

The workers run it, never a web request: every minute (``tasks.jobs.sweep_queued_jobs`` on the beat schedule of
``webapp.celery``) and when a worker starts. The periodic sweep also removes the upload folders that no unfinished
job names once an hour old (:func:`remove_orphan_uploads`: left by a request that died while storing a file, or
from before uploads were removed when their job ended); not at a worker's start, since a test's worker shares
the artifact folder with the developer's database.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.utils import timezone

from webapp.core.models import ImportJob
from webapp.core.queue import QueueUnavailable, broker_task_ids, job_task_id, send_now
from webapp.core.uploads import discard_upload, upload_folder, upload_folders

logger = logging.getLogger(__name__)

# A worker takes a message off its queue a moment before it records it as delivered: a job whose message is
# missing is looked for once more this much later before it counts as lost.
RECHECK_AFTER_S = 1.0
# An upload folder no unfinished job names is removed once this old (a request may still be storing it).
ORPHAN_UPLOAD_AFTER_S = 3600.0


@dataclass(frozen=True)
class QueuedKind:
    """One kind of job: how to find its queued rows, what its task is, and how a sweep writes on it."""

    label: str
    model: Callable[[], type[models.Model]]  # imported late: the training app's models load after core's
    queued_state: str
    created_field: str
    task: str
    args: Callable[[Any], tuple[Any, ...]]
    note_requeued: Callable[[Any, str], None]  # record why the job was queued again
    queue: str | None = None  # None: the task's route
    taken: Callable[[Any], bool] = lambda row: False  # a worker runs it although its state says queued
    missing_input: Callable[[Any], str] = lambda row: ""  # why it can never run ("" when it can)
    fail: Callable[[Any, str], None] = lambda row, reason: None


def _import_job() -> type[models.Model]:
    return ImportJob


def _note_import(job: Any, reason: str) -> None:
    ImportJob.objects.filter(pk=job.pk).update(message=reason)  # cleared when a worker starts it


def _training(name: str) -> Callable[[], type[models.Model]]:
    def model() -> type[models.Model]:
        from webapp.training import models as training_models

        return getattr(training_models, name)  # type: ignore[no-any-return]

    return model


def _note_run(run: Any, reason: str) -> None:
    from webapp.training.models import TrainingRun, append_log

    TrainingRun.objects.filter(pk=run.pk).update(log_tail=append_log(run.log_tail, reason))


def _note_error(name: str) -> Callable[[Any, str], None]:
    def note(row: Any, reason: str) -> None:
        _training(name)().objects.filter(pk=row.pk).update(error=reason)

    return note


def _index_taken(index: Any) -> bool:
    from webapp.training.services import index_being_built

    return index_being_built(index.pk)


def _upload_gone(upload: Any) -> str:
    if Path(upload.path).is_file():
        return ""
    return f"{upload.file_name}: the uploaded file is gone ({upload.path}); upload it again"


def _fail_upload(upload: Any, reason: str) -> None:
    from webapp.training.models import WordVectorUpload

    WordVectorUpload.objects.filter(pk=upload.pk).update(state=WordVectorUpload.State.FAILED, error=reason,
                                                         finished_at=timezone.now())
    discard_upload(upload.path)


KINDS: tuple[QueuedKind, ...] = (
    QueuedKind("import job", _import_job, "queued", "created_at", "tasks.imports.run_import",
               lambda job: (job.pk,), _note_import),
    QueuedKind("training run", _training("TrainingRun"), "queued", "queued_at", "tasks.training.train_task",
               lambda run: (run.pk,), _note_run),
    QueuedKind("word-vector upload", _training("WordVectorUpload"), "queued", "created_at",
               "tasks.training.word_vectors_upload_task", lambda upload: (upload.pk,), _note_error("WordVectorUpload"),
               queue="default", missing_input=_upload_gone, fail=_fail_upload),
    # Queued again without "activate": the task reads the row's activate_when_built, which the admin's choice set.
    QueuedKind("index version", _training("IndexVersion"), "building", "created_at", "tasks.indexing.build_index_task",
               lambda index: (index.pk, False), _note_error("IndexVersion"), taken=_index_taken),
    QueuedKind("evaluation", _training("Evaluation"), "queued", "created_at", "tasks.training.evaluate_task",
               lambda evaluation: (evaluation.pk,), _note_error("Evaluation")),
)


def sweep_after() -> timedelta:
    return timedelta(seconds=int(settings.QUEUED_JOB_SWEEP_AFTER_S))


def sweep_queued_jobs(older_than: timedelta | None = None) -> list[str]:
    """Queue again (or fail) the jobs queued longer than ``older_than`` whose message is lost; returns what was
    done, one line per job ("import job 7 queued again"). Worker-side only; nothing is done where the broker
    cannot be read (unreachable, or not Redis)."""
    cutoff = timezone.now() - (older_than if older_than is not None else sweep_after())
    candidates = [(kind, row) for kind in KINDS
                  for row in kind.model().objects.filter(state=kind.queued_state, **{f"{kind.created_field}__lt": cutoff})]
    done: list[str] = []
    if candidates:
        lost = _lost(candidates)
        for kind, row in lost:
            try:
                line = _requeue(kind, row)
            except QueueUnavailable as exc:
                logger.warning("queued jobs: %s", exc)
                break
            if line:
                logger.warning("queued jobs: %s", line)
                done.append(line)
    return done


def _lost(candidates: list[tuple[QueuedKind, Any]]) -> list[tuple[QueuedKind, Any]]:
    """The candidates whose message the broker holds neither now nor a moment later."""
    lost = candidates
    for attempt in range(2):
        if attempt:
            time.sleep(RECHECK_AFTER_S)
        try:
            present = broker_task_ids()
        except QueueUnavailable as exc:
            logger.warning("queued jobs: not swept: %s", exc)
            return []
        if present is None:
            logger.info("queued jobs: not swept: the broker is not Redis, its messages cannot be listed")
            return []
        lost = [(kind, row) for kind, row in lost if job_task_id(row) not in present]
        if not lost:
            break
    return lost


def _requeue(kind: QueuedKind, row: Any) -> str:
    """Queue one lost job again under its lock (a worker that gets the message waits for this commit)."""
    model = kind.model()
    with transaction.atomic():
        locked = model.objects.select_for_update(skip_locked=True).filter(pk=row.pk, state=kind.queued_state).first()
        if locked is None or kind.taken(locked):
            return ""  # started, ended or being swept meanwhile
        waited = timezone.now() - getattr(locked, kind.created_field)
        missing = kind.missing_input(locked)
        if missing:
            kind.fail(locked, missing)
            return f"{kind.label} {locked.pk} failed: {missing}"
        send_now(kind.task, *kind.args(locked), queue=kind.queue, task_id=job_task_id(locked))
        reason = (f"queued again at {timezone.now():%Y-%m-%d %H:%M:%S %Z}: no worker had taken it after "
                  f"{_minutes(waited)} and the task queue no longer held its message (lost by the broker?)")
        kind.note_requeued(locked, reason)
    return f"{kind.label} {row.pk} queued again"


def _minutes(delta: timedelta) -> str:
    minutes = int(delta.total_seconds() // 60)
    return f"{minutes} min" if minutes < 120 else f"{minutes // 60} h"


def remove_orphan_uploads(older_than_s: float = ORPHAN_UPLOAD_AFTER_S) -> list[str]:
    """Remove the upload folders that no unfinished job names (left by a job that ended before uploads were
    removed, or by a request that died while storing one); returns one line per folder."""
    from webapp.training.models import WordVectorUpload

    folders = list(upload_folders(older_than_s))
    if not folders:
        return []
    named = {upload_folder(p) for p in ImportJob.objects.filter(
        state__in=(ImportJob.State.QUEUED, ImportJob.State.RUNNING)).values_list("path", flat=True)}
    named |= {upload_folder(p) for p in WordVectorUpload.objects.filter(
        state__in=(WordVectorUpload.State.QUEUED, WordVectorUpload.State.RUNNING)).values_list("path", flat=True)}
    removed = []
    for folder in folders:
        if folder.resolve() not in named:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(f"upload folder {folder.name} removed: no unfinished job names it")
    for line in removed:
        logger.info("uploads: %s", line)
    return removed
