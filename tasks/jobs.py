"""Housekeeping of every kind of job: the one job sweep (:mod:`webapp.jobs.sweep`: running jobs whose worker died
are failed, queued jobs whose message the broker lost are queued again, uploads no job reads are removed), and the
removal of an import's uploaded file once the import has ended.

The sweep runs every minute as :func:`sweep_jobs` on the beat schedule (``webapp.celery``); each worker's thread
(webapp.jobs.sweeper) fails the lost ones every 5 s, the first time as the worker starts, when the lost messages are
queued again too.

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


@shared_task(name="tasks.jobs.sweep_jobs", ignore_result=True, **RETRY_OPTIONS)
def sweep_jobs() -> list[str]:
    """Fail the running jobs whose worker died, queue again the ones whose message the broker lost, remove upload
    folders no unfinished job names."""
    from webapp.jobs.sweep import sweep

    return sweep()


@worker_ready.connect
def _requeue_on_start(**_: Any) -> None:
    """A worker that starts (perhaps after Redis lost its queues) queues again what nobody will run. (What a killed
    predecessor left running, its sweeper thread fails at once: webapp.jobs.sweeper.)"""
    from django.db import connection

    from webapp.jobs.sweep import requeue_lost_messages

    try:
        requeue_lost_messages()
    except Exception:
        logger.exception("the job sweep at the worker's start failed")
    finally:
        connection.close()


@task_postrun.connect
def _import_ended(task: Any = None, args: Any = (), retval: Any = None, state: str = "", **_: Any) -> None:
    if getattr(task, "name", "") != RUN_IMPORT or state == states.RETRY or not args:
        return
    from webapp.imports.jobs import fail_import, import_ended

    job_id = args[0]
    try:
        if state == states.FAILURE:  # an error the task did not record (a database outage outlasting the retries)
            fail_import(job_id, f"the import stopped: {type(retval).__name__}: {retval}")
        import_ended(job_id)
    except Exception:  # the database is unreachable too
        logger.exception("import %s: could not remove its uploaded file", job_id)
