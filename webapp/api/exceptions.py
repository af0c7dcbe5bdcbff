"""DRF's exception handler, and answers of the workbench's own: the task queue unreachable is a 503; a request body
over Django's limits is a JSON 400 naming the limit (Django's own answer is an HTML page, which an API client cannot
read)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
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
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return Response({"detail": f"the request body is over the {limit:,}-byte limit (DATA_UPLOAD_MAX_MEMORY_SIZE): send a "
                                   "large document as a file (multipart upload) or through an import"},
                        status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, TooManyFieldsSent | TooManyFilesSent):
        return Response({"detail": f"the request has too many fields or files ({exc})"}, status=status.HTTP_400_BAD_REQUEST)
    return drf_exception_handler(exc, context)
