"""Fixtures that start real processes: a Celery worker against the real broker and the test database."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def database_url(settings_dict: dict) -> str:  # type: ignore[type-arg]
    """A URL for the database Django is connected to now (the test database during tests)."""
    host = settings_dict.get("HOST") or ""
    host = quote(host, safe="") if host.startswith("/") else host
    port = f":{settings_dict['PORT']}" if settings_dict.get("PORT") else ""
    user = settings_dict.get("USER") or "postgres"
    password = f":{quote(settings_dict['PASSWORD'])}" if settings_dict.get("PASSWORD") else ""
    return f"postgresql://{user}{password}@{host}{port}/{settings_dict['NAME']}"


class Worker:
    def __init__(self, queue: str, process: subprocess.Popen, log: Path) -> None:  # type: ignore[type-arg]
        self.queue = queue
        self.process = process
        self.log = log


@pytest.fixture(scope="session")
def celery_worker_process(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[Worker]:  # type: ignore[no-untyped-def]
    """A real `celery worker` process on a private queue, connected to the test database.

    The private queue keeps a developer's running workbench worker (same broker) from taking test tasks.
    """
    from django.conf import settings
    from django.db import connection

    from webapp.celery import app

    queue = f"test-{uuid.uuid4().hex[:8]}"
    log = tmp_path_factory.mktemp("worker") / "worker.log"
    env = dict(os.environ)
    env["DATABASE_URL"] = database_url(connection.settings_dict)
    env["CELERY_BROKER_URL"] = settings.CELERY_BROKER_URL
    env["CELERY_RESULT_BACKEND"] = settings.CELERY_RESULT_BACKEND
    env["DB_CONN_MAX_AGE"] = "0"
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "webapp", "worker", "-Q", queue, "-c", "1", "-n", f"{queue}@%h", "--loglevel", "INFO"],
        cwd=PROJECT_ROOT,
        env=env,
        stdout=open(log, "wb"),
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 90
    try:
        while not app.control.ping(destination=[f"{queue}@{os.uname().nodename}"], timeout=1.0):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the Celery worker did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield Worker(queue, process, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
