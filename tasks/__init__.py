"""Celery tasks. Each takes ids, loads its rows, calls a service function and records the outcome.

Tasks never receive model instances or file contents: a retried or re-delivered task reads the current
state from the database and is idempotent, so every task retries on a transient database error
(:data:`TRANSIENT_ERRORS`: a restart or failover of PostgreSQL), with exponential back-off.

The web app never imports this package: it queues work by task name (``webapp.core.queue.enqueue``).
"""

from __future__ import annotations

from typing import Any

from django.db import InterfaceError, OperationalError

TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (OperationalError, InterfaceError)

# Options every task shares: retry a transient error up to 3 times, 2, 4, 8 s later (jittered).
RETRY_OPTIONS: dict[str, Any] = {
    "autoretry_for": TRANSIENT_ERRORS,
    "retry_backoff": 2,
    "retry_jitter": True,
    "max_retries": 3,
}
