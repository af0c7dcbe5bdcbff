from __future__ import annotations

import socket

from celery import shared_task


@shared_task(name="tasks.health.ping")
def ping() -> str:
    """A round trip through the broker to a worker: used by the run command to wait for the worker."""
    return f"pong from {socket.gethostname()}"
