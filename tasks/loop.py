"""The learning loop's tasks (:mod:`webapp.training.loop`), on the default queue: none trains or loads a model.

``gate_run_task`` checks a succeeded run's index against its dictionary's promotion gate (queueing the evaluations
it lacks) and promotes it when the gate auto-promotes; it is queued when the run succeeds and again when an
evaluation of its dictionary ends. The beat queues ``nightly_retrain_task`` once a night and ``recheck_gates_task``
every few minutes (the slow path for a lost message).
"""

from __future__ import annotations

import logging

from celery import shared_task

from tasks import RETRY_OPTIONS

logger = logging.getLogger(__name__)


@shared_task(name="tasks.loop.gate_run_task", acks_late=True, reject_on_worker_lost=True, **RETRY_OPTIONS)
def gate_run_task(run_id: int) -> str:
    """Idempotent: a run whose verdict is final is left as it is; two at once take turns on the run's row lock."""
    from webapp.training.loop import gate_run

    return gate_run(run_id)


@shared_task(name="tasks.loop.nightly_retrain_task", ignore_result=True, **RETRY_OPTIONS)
def nightly_retrain_task() -> list[int]:
    from webapp.training.loop import nightly_retrain

    queued = nightly_retrain()
    logger.info("nightly retrain: %d run(s) queued %s", len(queued), queued)
    return queued


@shared_task(name="tasks.loop.recheck_gates_task", ignore_result=True, **RETRY_OPTIONS)
def recheck_gates_task() -> list[int]:
    from webapp.training.loop import recheck_waiting

    return recheck_waiting()
