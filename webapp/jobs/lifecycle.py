"""Every change of a job's state, each one conditional UPDATE so that two writers never both win.

A job ends once: a job failed by the sweep (its worker lost) keeps that ending when its worker, late, reports
success; a cancelled job is not started. The kinds' own rows add what is theirs around these (a training run
appends to its log, an import removes its uploaded file: webapp.jobs.kinds).
"""

from __future__ import annotations

import socket

from django.db.models import F
from django.db.models.functions import Now

from webapp.jobs.models import Job

CANCELLED_BY_REQUEST = "cancelled at a user's request"
CANCELLED_BEFORE_START = "cancelled before it started"


def start(job_id: int, worker: str | None = None, task_id: str = "", heartbeat: bool = False) -> bool:
    """``queued`` -> ``running``; True for the one caller that started it (a re-delivered or duplicate task, or a
    job cancelled meanwhile, gets False). ``heartbeat``: the job proves it is alive by beating, starting now."""
    now = Now()  # the database's clock, as every heartbeat and the sweep's measure of one
    fields = {"state": Job.State.RUNNING, "started_at": now, "worker": worker or socket.gethostname(),
              "note": "", "attempts": F("attempts") + 1, "heartbeat_at": now if heartbeat else None}
    if task_id:
        fields["task_id"] = task_id
    return bool(Job.objects.filter(pk=job_id, state=Job.State.QUEUED).update(**fields))


def take(job_id: int, worker: str | None = None) -> bool:
    """For a runner that holds the job's lease: ``queued`` -> ``running``, or a ``running`` job taken up again (its
    message re-delivered after its worker was lost, before the sweep failed it: the lease, now this runner's, says
    nobody else runs it). False when it has ended (after success, or failed by the sweep)."""
    return _rolled_up(job_id, Job.objects.filter(pk=job_id, state__in=Job.UNFINISHED_STATES).update(
        state=Job.State.RUNNING, started_at=Now(), worker=worker or socket.gethostname(), note="",
        attempts=F("attempts") + 1))


def succeed(job_id: int, result: dict | None = None) -> bool:
    """``running`` -> ``succeeded`` (with what it made, in brief)."""
    fields: dict = {"state": Job.State.SUCCEEDED, "finished_at": Now()}
    if result is not None:
        fields["result"] = result
    return _rolled_up(job_id, Job.objects.filter(pk=job_id, state=Job.State.RUNNING).update(**fields))


def fail(job_id: int, reason: str) -> bool:
    """An unfinished job ends ``failed`` with the reason; False when it had ended already. A NUL (a file's own
    text quoted in the reason) would make PostgreSQL refuse the whole message: it is written as ``\\x00``."""
    return _rolled_up(job_id, Job.objects.filter(pk=job_id, state__in=Job.UNFINISHED_STATES).update(
        state=Job.State.FAILED, error=reason.replace("\x00", "\\x00"), finished_at=Now()))


def stop_cancelled(job_id: int, reason: str = CANCELLED_BY_REQUEST) -> bool:
    """A running job stopped at a cancel request."""
    return _rolled_up(job_id, Job.objects.filter(pk=job_id, state__in=Job.UNFINISHED_STATES).update(
        state=Job.State.CANCELLED, error=reason, finished_at=Now()))


def _rolled_up(job_id: int, updated: int) -> bool:
    """After a chunk's state changed (started, or ended): its parent says so too."""
    if updated:
        parent = Job.objects.filter(pk=job_id).values_list("parent_id", flat=True).first()
        if parent is not None:
            roll_up(parent)
    return bool(updated)


ROLL_UP = """
UPDATE jobs_job p SET
    progress = c.progress,
    state = CASE WHEN c.unfinished > 0 THEN (CASE WHEN c.started > 0 THEN 'running' ELSE p.state END)
                 WHEN c.failed > 0 THEN 'failed' WHEN c.cancelled > 0 THEN 'cancelled' ELSE 'succeeded' END,
    started_at = CASE WHEN c.started > 0 THEN coalesce(p.started_at, now()) ELSE p.started_at END,
    finished_at = CASE WHEN c.unfinished = 0 THEN now() ELSE NULL END,
    error = CASE WHEN c.unfinished = 0 AND c.failed > 0
                 THEN c.failed || ' of ' || c.total || ' chunks failed; the first: ' || c.first_error ELSE p.error END,
    progress_note = c.total - c.unfinished || ' of ' || c.total || ' chunks done'
FROM (SELECT count(*) AS total, coalesce(sum(progress), 0) AS progress,
             count(*) FILTER (WHERE state IN ('queued', 'running')) AS unfinished,
             count(*) FILTER (WHERE state <> 'queued') AS started,
             count(*) FILTER (WHERE state = 'failed') AS failed,
             count(*) FILTER (WHERE state = 'cancelled') AS cancelled,
             (array_agg(error ORDER BY id) FILTER (WHERE state = 'failed'))[1] AS first_error
      FROM jobs_job WHERE parent_id = %s) c
WHERE p.id = %s AND p.state IN ('queued', 'running')
"""


def roll_up(parent_id: int) -> None:
    """A parent job says what its chunks do: their progress summed, running once one has started, ended when the
    last has (failed if any failed, naming how many and the first reason; cancelled if any was)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(ROLL_UP, [parent_id, parent_id])


def request_cancel(job_id: int) -> str:
    """Ask a job to stop: a queued one is cancelled at once ("cancelled": its task may be revoked), a running one is
    asked to stop at its next report ("requested"); a finished one stays as it is ("finished")."""
    if Job.objects.filter(pk=job_id, state=Job.State.QUEUED).update(
            state=Job.State.CANCELLED, error=CANCELLED_BEFORE_START, finished_at=Now(), cancel_requested=True):
        return "cancelled"
    if Job.objects.filter(pk=job_id, state=Job.State.RUNNING).update(cancel_requested=True):
        return "requested"
    return "finished"


def cancel_wanted(job_id: int) -> bool:
    """Whether someone asked this job to stop (a runner asks between batches)."""
    return Job.objects.filter(pk=job_id, cancel_requested=True).exists()
