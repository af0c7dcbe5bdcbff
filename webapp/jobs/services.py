"""What a person does to a job (webapp.jobs.views, /api/jobs/): list them as their kinds describe them, and cancel
one. A kind that has its own way of stopping (a training run's task revoked, an index version marked cancelled) says
so in its registration; the others stop the one way every job does (webapp.jobs.lifecycle)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet
from django.urls import reverse

from webapp.audit import actions
from webapp.audit.events import record
from webapp.jobs import lifecycle
from webapp.jobs.kinds import kind_of, kinds, row_of, rows_of
from webapp.jobs.models import Job

logger = logging.getLogger(__name__)


class CannotCancel(ValueError):
    """The job cannot be cancelled (it has ended, or it is running and its kind cannot stop midway)."""


@dataclass(frozen=True)
class JobView:
    """One job as a page or the API shows it: the job, and what its kind says of it."""

    job: Job
    label: str
    subject: str
    url: str
    cancellable: bool


def jobs(kind: str = "", state: str = "", parent: int | None = None) -> QuerySet[Job]:
    found = Job.objects.select_related("created_by").order_by("-created_at", "-id")
    if kind:
        found = found.filter(kind=kind)
    if state:
        found = found.filter(state=state)
    if parent is not None:
        found = found.filter(parent_id=parent)
    return found


def describe(job: Job, row: Job | None = None) -> JobView:
    """What a page or the API shows of a job (``row``: the row of its kind, when the caller has it already)."""
    kind = kind_of(job.kind)
    row = row if row is not None else row_of(job)
    subject = url = ""
    if kind is not None:
        try:
            subject, url = kind.subject(row), kind.url(row)
        except Exception:  # a row its kind cannot describe (its subject deleted): the job is still listed
            logger.debug("job %s: its kind could not describe it", job.pk, exc_info=True)
    return JobView(job, kind.label if kind else job.kind, subject, url, cancellable(job))


def describe_all(jobs: Iterable[Job]) -> dict[int, JobView]:
    """:func:`describe` of many jobs, their kinds' rows read in one query per kind (a page that polls, an API page)."""
    jobs = list(jobs)
    rows = rows_of(jobs)
    return {job.pk: describe(job, rows.get(job.pk)) for job in jobs}


def cancellable(job: Job) -> bool:
    """A queued job can always be cancelled; a running one where its kind stops between batches."""
    if job.state == Job.State.QUEUED:
        return True
    kind = kind_of(job.kind)
    return job.state == Job.State.RUNNING and kind is not None and kind.stops_when_asked and not job.cancel_requested


def kind_choices() -> list[tuple[str, str]]:
    return sorted((kind.name, kind.label) for kind in kinds())


def cancel(job: Job, user: Any = None) -> Job:
    """Cancel a queued job at once, or ask a running one to stop at its next report; :class:`CannotCancel` says why
    not. Its task is revoked where it was queued (best effort: a task that finds its job cancelled does nothing).
    ``user``: who asked, the audit event's actor (a kind with its own cancel records its own event)."""
    if not cancellable(job):
        if job.is_finished:
            raise CannotCancel(f"job {job.pk} has ended ({job.state}): there is nothing to cancel")
        raise CannotCancel(f"job {job.pk} is running and a {job.kind} job cannot stop midway; it ends by itself")
    kind = kind_of(job.kind)
    row = row_of(job)
    if kind is not None and kind.cancel is not None:
        kind.cancel(row, user)
        job.refresh_from_db()
        return job
    before = job.state
    if lifecycle.request_cancel(job.pk) == "cancelled":
        _revoke(job)
        if kind is not None:
            kind.ended(row)  # a queued import's upload goes
    job.refresh_from_db()
    record_cancel(job, user, before)
    return job


def record_cancel(job: Job, user: Any, before: str) -> None:
    """The audit event of a cancel asked on the Jobs page or the API: cancelled at once, or asked to stop."""
    record(actions.JOB_CANCELLED, actor=user, obj=job, label=f"{job.kind} job {job.pk}",
           before={"state": before}, after={"state": job.state, "cancel_requested": job.cancel_requested},
           link=reverse("jobs:list"))


def _revoke(job: Job) -> None:
    from webapp.core.queue import job_task_id

    try:
        from webapp.celery import app

        app.control.revoke(job.task_id or job_task_id(row_of(job)))
    except Exception:
        logger.warning("job %s: could not revoke its task", job.pk, exc_info=True)
