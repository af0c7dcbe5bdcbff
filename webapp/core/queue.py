"""The one way the web app queues background work: by task name, after the current transaction commits.

Web code never imports ``tasks/`` (the tasks import the web app's services, so the other direction would be a
loop): it names the task. ``transaction.on_commit`` makes sure a worker never looks for a row the request has
not committed yet. Publishing retries on transient broker errors (a Redis restart, a dropped connection); if
the broker stays unreachable, ``on_failure`` lets the caller record that on its row instead of leaving a job
that no worker will ever run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import transaction

logger = logging.getLogger(__name__)

# Publishing: up to 3 retries, 0.2 s apart growing by 0.5 s, then give up (about 2 s in all).
RETRY_POLICY = {"max_retries": 3, "interval_start": 0.2, "interval_step": 0.5, "interval_max": 2.0}


class QueueUnavailable(RuntimeError):
    """The broker could not be reached: the task was not queued."""


def send_now(task_name: str, *args: Any, queue: str | None = None) -> str:
    """Publish ``task_name(*args)`` at once (routing by name, see ``webapp.celery``); returns the task id.

    ``queue`` overrides the route; ``settings.TASK_QUEUE_OVERRIDE`` (a private worker's queue) overrides both.
    """
    from webapp.celery import app

    queue = getattr(settings, "TASK_QUEUE_OVERRIDE", "") or queue
    options: dict[str, Any] = {"queue": queue} if queue else {}
    try:
        result = app.send_task(task_name, args=args, retry=True, retry_policy=RETRY_POLICY, **options)
    except Exception as exc:  # kombu raises OperationalError and friends, all after the retries
        raise QueueUnavailable(f"could not queue {task_name}: {type(exc).__name__}: {exc}") from exc
    return str(result.id)


def enqueue(
    task_name: str,
    *args: Any,
    queue: str | None = None,
    on_sent: Callable[[str], None] | None = None,
    on_failure: Callable[[QueueUnavailable], None] | None = None,
) -> None:
    """Queue ``task_name(*args)`` once the current transaction commits (at once outside a transaction).

    ``on_sent(task_id)`` runs after publishing; ``on_failure(error)`` when the broker stayed unreachable
    (without one the error is logged: the request that queued the work has committed and succeeded).
    """

    def publish() -> None:
        try:
            task_id = send_now(task_name, *args, queue=queue)
        except QueueUnavailable as exc:
            logger.error("%s", exc)
            if on_failure is not None:
                on_failure(exc)
            return
        if on_sent is not None:
            on_sent(task_id)

    transaction.on_commit(publish)
