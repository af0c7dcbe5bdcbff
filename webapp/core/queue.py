"""The one way the web app queues background work: by task name, after the current transaction commits.

Web code never imports ``tasks/`` (the tasks import the web app's services, so the other direction would be a
loop): it names the task. ``transaction.on_commit`` makes sure a worker never looks for a row the request has
not committed yet. Publishing retries briefly on transient broker errors (``CELERY_TASK_PUBLISH_RETRY_POLICY``,
bounded by ``CELERY_BROKER_TIMEOUT_S``: see settings). A job's row and its message succeed or fail together: when
the broker stays unreachable, ``on_failure`` records it on the row (failed, with the reason) and the
:class:`QueueUnavailable` goes on up to the request, which answers 503 (``webapp.api.exceptions``, the pages).

Each job's task has an id derived from its row (:func:`job_task_id`), the same every time the row is queued, so
the job sweep (``webapp.jobs.sweep``) can tell a message waiting in the broker
(:func:`broker_task_ids`) from one that was lost.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import models, transaction

logger = logging.getLogger(__name__)

# The namespace of job task ids: uuid5(NAMESPACE_DNS, "el-workbench") (any fixed uuid would do).
JOB_TASK_NAMESPACE = uuid.UUID("7f89d1d5-6336-5592-8893-9b0077599792")


class QueueUnavailable(RuntimeError):
    """The broker could not be reached: the task was not queued."""


def broker_description() -> str:
    """The broker as a message names it, its password masked: "Redis at redis://:**@host:6379/0"."""
    from kombu.utils.url import maybe_sanitize_url

    from webapp.celery import app

    url = str(maybe_sanitize_url(app.conf.broker_url or ""))
    return f"Redis at {url}" if url.startswith(("redis", "socket")) else url


def unavailable(exc: BaseException) -> QueueUnavailable:
    return QueueUnavailable(f"the task queue ({broker_description()}) is not reachable; nothing was queued "
                            f"({type(exc).__name__}: {str(exc).strip()})")


def job_task_id(row: models.Model) -> str:
    """The task id of a job row: the same each time the row is queued, so a message in the broker is known to be
    this job's. The row's creation time (to the microsecond) is part of it, so that another database sharing the
    Redis (a test database beside the developer's, a database recreated) never has a job of the same id."""
    created = getattr(row, "created_at", None)
    key = f"{row._meta.label_lower}|{row.pk}|{created.isoformat() if created else ''}"
    return str(uuid.uuid5(JOB_TASK_NAMESPACE, key))


def sent_to() -> str:
    """The queue this process sends to in place of the routes (its ``TASK_QUEUE_OVERRIDE``), or "" (the routes,
    the same in every process): what a job records to be sent again to the same place."""
    return str(getattr(settings, "TASK_QUEUE_OVERRIDE", "") or "")


def send_now(task_name: str, *args: Any, queue: str | None = None, task_id: str | None = None,
             same_queue: bool = False) -> str:
    """Publish ``task_name(*args)`` at once (routing by name, see ``webapp.celery``); returns the task id.

    ``queue`` overrides the route; ``settings.TASK_QUEUE_OVERRIDE`` (a private worker's queue) overrides both,
    unless ``same_queue``: a job sent again goes to the queue it was first sent to (:func:`sent_to`), whichever
    process's sweep sends it.
    No result is kept: a job's row is its result. (Asking for one would also subscribe to the result backend
    first, which retries a dead Redis 20 times a second apart before giving up.)
    """
    from kombu.exceptions import EncodeError

    from webapp.celery import app

    if not (same_queue and queue):
        queue = getattr(settings, "TASK_QUEUE_OVERRIDE", "") or queue
    options: dict[str, Any] = {"queue": queue} if queue else {}
    try:
        result = app.send_task(task_name, args=args, task_id=task_id, ignore_result=True, **options)
    except EncodeError:
        raise  # a programming error, not the broker's
    except Exception as exc:  # kombu's OperationalError, redis' and socket errors, all after the retries
        raise unavailable(exc) from exc
    return str(result.id)


def enqueue(
    task_name: str,
    *args: Any,
    queue: str | None = None,
    task_id: str | None = None,
    on_sent: Callable[[str], None] | None = None,
    on_failure: Callable[[QueueUnavailable], None] | None = None,
) -> None:
    """Queue ``task_name(*args)`` once the current transaction commits (at once outside a transaction).

    ``on_sent(task_id)`` runs after publishing. When the broker stays unreachable, a job (a call with
    ``on_failure``) has ``on_failure(error)`` record it on its row, then the error is raised: out of the
    ``transaction.atomic`` block that created the row (or out of this call, outside one), so the request answers
    503. Work without ``on_failure`` (a re-linking after a promotion) is best effort: the error is logged.
    """

    def publish() -> None:
        try:
            sent = send_now(task_name, *args, queue=queue, task_id=task_id)
        except QueueUnavailable as exc:
            logger.error("could not queue %s: %s", task_name, exc)
            if on_failure is None:
                return
            on_failure(exc)
            raise
        if on_sent is not None:
            on_sent(sent)

    transaction.on_commit(publish)


# --- what the broker holds ----------------------------------------------------------------------------------


def broker_task_ids() -> set[str] | None:
    """The ids of every task message the broker holds: waiting in a queue, or delivered to a worker and not yet
    acknowledged (every task here acknowledges late, so a task being run is still there). None where the broker
    is not Redis (kombu's Redis transport is the one read here); :class:`QueueUnavailable` when it is unreachable.
    """
    from redis.exceptions import ResponseError

    from webapp.celery import app

    def listed(client: Any, key: str) -> list[bytes]:
        try:
            return list(client.lrange(key, 0, -1))
        except ResponseError:  # a key of that name that is not a queue
            return []

    try:
        with app.connection_for_write() as conn:
            if conn.transport.driver_type != "redis":
                return None
            channel = conn.default_channel
            client = channel.client
            # Every queue ever declared on this Redis is bound in one of kombu's binding sets.
            queues = set()
            for key in client.scan_iter(match=channel.keyprefix_queue % "*", count=500):
                for member in client.smembers(key):
                    queues.add(member.decode().split(channel.sep)[-1])
            ids: set[str] = set()
            for queue in sorted(q for q in queues if q):
                for priority in channel.priority_steps:
                    ids.update(_message_id(raw) for raw in listed(client, channel._q_for_pri(queue, priority)))
            # A delivered message waits in the unacked hash, as [message, exchange, routing key], until acknowledged.
            ids.update(_message_id(raw, delivered=True) for raw in client.hvals(channel.unacked_key))
    except Exception as exc:
        raise unavailable(exc) from exc
    ids.discard("")
    return ids


def _message_id(raw: bytes, delivered: bool = False) -> str:
    try:
        message = json.loads(raw)
        if delivered:
            message = message[0]
        return str(message["headers"]["id"])
    except (ValueError, TypeError, KeyError, IndexError):
        return ""  # not a task message (a control reply): no id to find
