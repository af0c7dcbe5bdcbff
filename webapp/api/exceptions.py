"""DRF's exception handler, and one answer of the workbench's own: the task queue unreachable is a 503."""

from __future__ import annotations

from typing import Any

from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from webapp.core.queue import QueueUnavailable

# How long a client should wait before trying again: a Redis restart takes seconds.
RETRY_AFTER_S = 30


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, QueueUnavailable):
        # The job's row, where one was created, is failed with the same reason (webapp.core.queue.enqueue).
        return Response({"detail": str(exc)}, status=status.HTTP_503_SERVICE_UNAVAILABLE,
                        headers={"Retry-After": str(RETRY_AFTER_S)})
    return drf_exception_handler(exc, context)
