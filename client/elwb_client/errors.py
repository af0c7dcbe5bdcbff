"""What the client raises: :class:`ApiError` for an answer the server refused (with its status and its own words),
:class:`JobFailed` and :class:`JobCancelled` for a job that ended without succeeding, :class:`WaitTimeout` when
:meth:`Client.wait <elwb_client.Client.wait>` gave up before the job ended."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from elwb_client.jobs import Job


class ClientError(Exception):
    """Every error of this package."""


class ApiError(ClientError):
    """The server answered with an error status. ``status`` is the HTTP status, ``message`` the server's message
    (its JSON ``detail``, or each field's errors joined), ``body`` the parsed JSON answer (None when it was not
    JSON), ``method`` and ``url`` the request."""

    def __init__(self, status: int, message: str, *, method: str = "", url: str = "", body: Any = None) -> None:
        self.status = status
        self.message = message
        self.method = method
        self.url = url
        self.body = body
        where = f" ({method} {url})" if method else ""
        super().__init__(f"HTTP {status}{where}: {message}")


class JobEnded(ClientError):
    """A job ended without succeeding; ``job`` is its last state."""

    def __init__(self, job: Job, message: str) -> None:
        self.job = job
        super().__init__(message)


class JobFailed(JobEnded):
    """The job failed; ``error`` is the job's own reason (``job.error``)."""

    def __init__(self, job: Job) -> None:
        self.error = job.error or "(no reason given)"
        super().__init__(job, f"{job.describe()} failed: {self.error}")


class JobCancelled(JobEnded):
    """The job was cancelled (by someone, or by :meth:`Client.cancel <elwb_client.Client.cancel>`)."""

    def __init__(self, job: Job) -> None:
        super().__init__(job, f"{job.describe()} was cancelled" + (f": {job.note}" if job.note else ""))


class WaitTimeout(ClientError, TimeoutError):
    """:meth:`Client.wait <elwb_client.Client.wait>` ran out of time; the job goes on (``job`` is its last state)."""

    def __init__(self, job: Job, timeout: float) -> None:
        self.job = job
        super().__init__(f"{job.describe()} is still {job.state} after {timeout:g} s ({job.progress_text()})")


def error_message(body: Any, fallback: str) -> str:
    """The server's message in one line: DRF's ``{"detail": ...}``, or ``{"field": ["error", ...], ...}`` as
    ``field: error; ...``; ``fallback`` (the status's reason) when the body says nothing readable."""
    if isinstance(body, dict):
        if isinstance(body.get("detail"), str) and len(body) == 1:
            return str(body["detail"])
        parts = []
        for key, value in body.items():
            text = "; ".join(map(str, value)) if isinstance(value, list) else str(value)
            parts.append(text if key in ("detail", "non_field_errors") else f"{key}: {text}")
        if parts:
            return "; ".join(parts)
    if isinstance(body, list) and body:
        return "; ".join(map(str, body))
    if isinstance(body, str) and body.strip():
        return body.strip()
    return fallback
