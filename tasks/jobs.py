"""Housekeeping of the jobs on the default queue: the sweep of queued jobs whose message was lost, the failing of
running jobs whose worker died (:mod:`webapp.core.abandoned`), and the removal of an import's uploaded file once the
import has ended.

The sweep (:func:`webapp.core.sweep.sweep_queued_jobs`) runs when a worker starts and every minute as
:func:`sweep_queued_jobs` on the beat schedule (``webapp.celery``).

An uploaded file is removed after the task that ran its import, when the import succeeded or failed for good: not
after a try that will be retried (a database restart), nor while the message may be delivered again (a worker
lost mid-import re-queues it). An import task that fails for good without having recorded it (retries exhausted)
leaves its job ``failed`` with the error, not ``running`` for ever.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task, states
from celery.signals import task_postrun, worker_ready

from tasks import RETRY_OPTIONS

logger = logging.getLogger(__name__)

RUN_IMPORT = "tasks.imports.run_import"


@shared_task(name="tasks.jobs.sweep_queued_jobs", ignore_result=True, **RETRY_OPTIONS)
def sweep_queued_jobs() -> list[str]:
    """Queue again the jobs whose message the broker lost; fail the running ones whose worker died; remove upload
    folders no unfinished job names."""
    from webapp.core.abandoned import fail_abandoned_jobs
    from webapp.core.sweep import remove_orphan_uploads
    from webapp.core.sweep import sweep_queued_jobs as sweep

    return sweep() + fail_abandoned_jobs() + remove_orphan_uploads()


@worker_ready.connect
def _sweep_on_start(**_: Any) -> None:
    """A worker that starts (perhaps after Redis lost its queues) queues again the jobs nobody will run."""
    from django.db import connection

    from webapp.core.abandoned import fail_abandoned_jobs
    from webapp.core.sweep import sweep_queued_jobs as sweep

    try:
        fail_abandoned_jobs()
        sweep()
    except Exception:
        logger.exception("the sweep of queued jobs failed")
    finally:
        connection.close()


@task_postrun.connect
def _import_ended(task: Any = None, args: Any = (), retval: Any = None, state: str = "", **_: Any) -> None:
    if getattr(task, "name", "") != RUN_IMPORT or state == states.RETRY or not args:
        return
    from django.utils import timezone

    from webapp.core.jobs import import_ended
    from webapp.core.models import ImportJob

    job_id = args[0]
    try:
        if state == states.FAILURE:  # an error the task did not record (a database outage outlasting the retries)
            ImportJob.objects.filter(pk=job_id, state__in=(ImportJob.State.QUEUED, ImportJob.State.RUNNING)).update(
                state=ImportJob.State.FAILED, finished_at=timezone.now(),
                message=f"the import stopped: {type(retval).__name__}: {retval}".replace("\x00", "\\x00"),
            )
        import_ended(job_id)
    except Exception:  # the database is unreachable too
        logger.exception("import %s: could not remove its uploaded file", job_id)
