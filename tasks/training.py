"""Training runs on the gpu queue (CPU where the worker has no GPU).

``acks_late=True`` with ``reject_on_worker_lost=False``: the message is acknowledged only once the task
returns, so a worker whose *main* process dies (SIGKILL, machine lost) leaves the message unacknowledged and
the broker re-delivers it; :func:`webapp.training.execution.run_training` then finds the run already started
(failed by the stale-heartbeat sweep, or still beating elsewhere) and does nothing, so a run is never trained
twice. When only the pool's child process dies (OOM killer, hard time limit) Celery would re-queue the message
if ``reject_on_worker_lost`` were true: a job that kills its process every time would then loop forever, hours
of GPU each. With it false the task is failed and acknowledged, and the run is failed by the heartbeat sweep
with "worker lost"; an admin starts a new run deliberately. The soft time limit ends a run ``failed`` with
"time limit exceeded"; the hard limit (one minute later) is the sweep's case.

The sweep (:mod:`webapp.jobs.sweep`, the same for every kind of job) runs in the workers and the launcher, never
in a web request: every 5 s in a thread of each worker's main process and of ``python -m webapp.launcher``
(:mod:`webapp.jobs.sweeper`: a killed worker's run fails within about 25 s), and every minute as
``tasks.jobs.sweep_jobs`` on the beat schedule, on the interactive queue so that a gpu worker busy with a long run
does not hold it up.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.conf import settings

from tasks import RETRY_OPTIONS

logger = logging.getLogger(__name__)

TIME_LIMIT_S = int(settings.CELERY_TASK_TIME_LIMIT)


@shared_task(
    name="tasks.training.train_task",
    bind=True,
    acks_late=True,
    reject_on_worker_lost=False,
    time_limit=TIME_LIMIT_S,
    soft_time_limit=max(30, TIME_LIMIT_S - 60),
    **RETRY_OPTIONS,
)
def train_task(self: Any, run_id: int) -> str:
    from webapp.training.execution import run_training
    from webapp.training.loop import after_run

    state = run_training(run_id, task_id=self.request.id or "")
    after_run(run_id, state)  # the learning loop: the gate's check of the new index (webapp.training.loop)
    return state


@shared_task(
    name="tasks.training.evaluate_task",
    acks_late=True,
    reject_on_worker_lost=True,  # reading and ranking only: safe to run again on another worker
    time_limit=TIME_LIMIT_S,
    soft_time_limit=max(30, TIME_LIMIT_S - 60),
    **RETRY_OPTIONS,
)
def evaluate_task(evaluation_id: int) -> str:
    from webapp.training.evaluation import run_evaluation
    from webapp.training.loop import after_evaluation

    state = run_evaluation(evaluation_id)
    after_evaluation(evaluation_id)  # runs whose gate waited on it are checked again
    return state


@shared_task(
    name="tasks.training.word_vectors_upload_task",
    acks_late=True,
    reject_on_worker_lost=True,  # reads a file and writes a folder it replaces: safe to run again
    time_limit=TIME_LIMIT_S,
    soft_time_limit=max(30, TIME_LIMIT_S - 60),
    **RETRY_OPTIONS,
)
def word_vectors_upload_task(upload_id: int) -> str:
    """Read an admin's large word-vector file (queued on the default queue: see webapp.training.word_vectors)."""
    from webapp.training.word_vectors import run_upload

    return run_upload(upload_id)
