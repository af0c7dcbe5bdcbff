"""The one sweep of jobs: it fails a running job whose worker is gone, queues again a queued job whose message
the broker lost, and removes the uploads no unfinished job reads.

**Lost workers.** A running job is alive while its runner holds its lease (webapp.jobs.lease: PostgreSQL drops it
the moment the runner's process dies) or, for a job that beats a heartbeat instead, while its heartbeat is younger
than :data:`STALE_AFTER` (measured on the database's clock, so a worker whose clock is off is never taken for a
dead one). A running job with neither is failed with its kind's account of what was lost (``JobKind.lost_reason``),
and its kind tidies after it (``JobKind.ended``: an uploaded file removed). The same for every kind.

**Lost messages.** A message is lost when Redis restarts without persistence, or when the web process dies between
committing a job's row and publishing its task. A job queued longer than ``QUEUED_JOB_SWEEP_AFTER_S`` that no worker
has taken and whose task id (webapp.core.queue.job_task_id) the broker holds neither waiting nor delivered is queued
again under the same id, with the reason in its ``note``; one whose input is gone is failed instead.

The workers run it, never a web request: every few seconds in a thread of each worker and of the launcher
(webapp.jobs.sweeper), when a worker starts, and every minute on the beat schedule (``tasks.jobs.sweep_jobs``).
Sweeps are idempotent: rows are taken with SKIP LOCKED, the lease is taken before a job is failed, and a job ends
once (webapp.jobs.lifecycle).
"""

from __future__ import annotations

import logging
import shutil
import time
from collections import defaultdict
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.db.models.functions import Now
from django.utils import timezone

from webapp.core.queue import QueueUnavailable, broker_task_ids, job_task_id, send_now
from webapp.core.uploads import upload_folder, upload_folders
from webapp.jobs import lifecycle
from webapp.jobs.kinds import WORKER_LOST, JobKind, kind_of, kinds, row_of
from webapp.jobs.lease import leased, try_take_over
from webapp.jobs.models import Job

logger = logging.getLogger(__name__)

# A heartbeat job without a beat for this long has lost its worker: its runner beats every 5 s
# (webapp.training.progress), so this is four beats missed (20 s; the setting JOB_STALE_AFTER_S).
STALE_AFTER = timedelta(seconds=settings.JOB_STALE_AFTER_S)
# A worker takes a message off its queue a moment before it records it as delivered: a job whose message is
# missing is looked for once more this much later before it counts as lost.
RECHECK_AFTER_S = 1.0
# An upload folder no unfinished job names is removed once this old (a request may still be storing it).
ORPHAN_UPLOAD_AFTER_S = 3600.0


def sweep(older_than: timedelta | None = None) -> list[str]:
    """Everything the periodic sweep does; one line per job or folder it acted on."""
    return fail_lost_jobs() + requeue_lost_messages(older_than) + remove_orphan_uploads()


# --- running jobs whose worker is gone ------------------------------------------------------------------


def fail_lost_jobs(stale_after: timedelta = STALE_AFTER) -> list[str]:
    """Fail every running job with neither a lease held nor a fresh heartbeat; one line per job failed
    ("training run 7 failed: ...")."""
    # A parent job has no runner of its own: its chunks have (and end it, webapp.jobs.lifecycle.roll_up).
    running = Job.objects.filter(state=Job.State.RUNNING, children__isnull=True)
    suspects = dict(_without_heartbeat(running, stale_after).values_list("pk", "kind"))
    if not suspects:
        return []
    done: list[str] = []
    for pk in sorted(set(suspects) - leased(suspects)):
        line = _fail_lost(pk, suspects[pk], stale_after)
        if line:
            logger.warning("lost jobs: %s", line)
            done.append(line)
    return done


def _without_heartbeat(jobs: Any, stale_after: timedelta) -> Any:
    return jobs.filter(Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=Now() - stale_after))


def _fail_lost(pk: int, kind_name: str, stale_after: timedelta) -> str:
    kind = kind_of(kind_name)
    with transaction.atomic():
        # The lease first, for this transaction: a runner taking the job up now cannot start it meanwhile (it finds
        # the lease taken and leaves the job), and one that took it since the look above is seen here.
        if not try_take_over(pk):
            return ""
        locked = _without_heartbeat(Job.objects.select_for_update(skip_locked=True)
                                    .filter(pk=pk, state=Job.State.RUNNING), stale_after).first()
        if locked is None:
            return ""  # ended, beating again, or being swept by another process
        row = row_of(locked)
        reason = kind.lost_reason(row) if kind else WORKER_LOST
        failed = kind.fail(row, reason) if kind and kind.fail else lifecycle.fail(pk, reason)
    if not failed:
        return ""
    if kind:
        kind.ended(row)
    return f"{_label(kind, kind_name)} {pk} failed: {reason}"


def _label(kind: JobKind | None, name: str) -> str:
    return kind.label.lower() if kind else f"{name} job"


# --- queued jobs whose message was lost -----------------------------------------------------------------


def sweep_after() -> timedelta:
    return timedelta(seconds=int(settings.QUEUED_JOB_SWEEP_AFTER_S))


def requeue_lost_messages(older_than: timedelta | None = None) -> list[str]:
    """Queue again (or fail) the jobs queued longer than ``older_than`` whose message is lost; one line per job
    ("import 7 queued again"). Nothing is done where the broker cannot be read (unreachable, or not Redis)."""
    cutoff = timezone.now() - (older_than if older_than is not None else sweep_after())
    by_kind: dict[str, list[int]] = defaultdict(list)
    queued = Job.objects.filter(state=Job.State.QUEUED, created_at__lt=cutoff, children__isnull=True)
    for pk, name in queued.values_list("pk", "kind"):
        by_kind[name].append(pk)
    candidates = [(kind, row) for name, pks in by_kind.items() if (kind := kind_of(name)) is not None
                  for row in kind.model().objects.filter(pk__in=pks)]
    done: list[str] = []
    for kind, row in _lost(candidates):
        try:
            line = _requeue(kind, row)
        except QueueUnavailable as exc:
            logger.warning("queued jobs: %s", exc)
            break
        if line:
            logger.warning("queued jobs: %s", line)
            done.append(line)
    return done


def _lost(candidates: list[tuple[JobKind, Any]]) -> list[tuple[JobKind, Any]]:
    """The candidates whose message the broker holds neither now nor a moment later."""
    lost = candidates
    for attempt in range(2):
        if not lost:
            break
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
    return lost


def _requeue(kind: JobKind, row: Any) -> str:
    """Queue one lost job again under its lock (a worker that gets the message waits for this commit)."""
    with transaction.atomic():
        # A runner that holds the lease has taken it up (a builder in a shell that has not marked it running yet).
        if not try_take_over(row.pk):
            return ""
        if Job.objects.select_for_update(skip_locked=True).filter(pk=row.pk, state=Job.State.QUEUED).first() is None:
            return ""  # started, ended or being swept meanwhile
        missing = kind.missing_input(row)
        if missing:
            kind.fail(row, missing) if kind.fail else lifecycle.fail(row.pk, missing)
            transaction.on_commit(lambda: kind.ended(row))
            return f"{kind.label.lower()} {row.pk} failed: {missing}"
        send_now(kind.task, *kind.args(row), queue=kind.queue, task_id=job_task_id(row))
        waited = timezone.now() - row.created_at
        note = (f"queued again at {timezone.now():%Y-%m-%d %H:%M:%S %Z}: no worker had taken it after "
                f"{_minutes(waited)} and the task queue no longer held its message (lost by the broker?)")
        Job.objects.filter(pk=row.pk).update(note=note)  # cleared when a worker starts it
    return f"{kind.label.lower()} {row.pk} queued again"


def _minutes(delta: timedelta) -> str:
    minutes = int(delta.total_seconds() // 60)
    return f"{minutes} min" if minutes < 120 else f"{minutes // 60} h"


# --- uploads no job reads -------------------------------------------------------------------------------


def remove_orphan_uploads(older_than_s: float = ORPHAN_UPLOAD_AFTER_S) -> list[str]:
    """Remove the upload folders that no unfinished job names (left by a job that ended before uploads were
    removed, or by a request that died while storing one); one line per folder."""
    folders = list(upload_folders(older_than_s))
    if not folders:
        return []
    named = set()
    for kind in kinds():
        for row in kind.model().objects.filter(state__in=Job.UNFINISHED_STATES):
            path = kind.input_path(row)
            if path:
                named.add(upload_folder(path))
    removed = []
    for folder in folders:
        if folder.resolve() not in named:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(f"upload folder {folder.name} removed: no unfinished job names it")
    for line in removed:
        logger.info("uploads: %s", line)
    return removed
