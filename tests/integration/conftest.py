"""Fixtures that start real processes (a Celery worker against the real broker and the test database), and the
demo collection with an active index that the curation tests share."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def running_worker(queue: str, log: Path, **extra_env: str) -> Iterator[Worker]:
    """A real `celery worker` process on ``queue``, connected to the test database, until the block ends."""
    from django.conf import settings
    from django.db import connection

    from webapp.celery import app

    env = dict(os.environ, DATABASE_URL=database_url(connection.settings_dict), CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
               CELERY_RESULT_BACKEND=settings.CELERY_RESULT_BACKEND, DB_CONN_MAX_AGE="0", **extra_env)
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


@pytest.fixture(scope="session")
def celery_worker_process(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[Worker]:  # type: ignore[no-untyped-def]
    """A real `celery worker` process on a private queue, connected to the test database.

    The private queue keeps a developer's running workbench worker (same broker) from taking test tasks.
    """
    queue = f"test-{uuid.uuid4().hex[:8]}"
    with running_worker(queue, tmp_path_factory.mktemp("worker") / "worker.log") as worker:
        yield worker


# --- a broker that is down ------------------------------------------------------------------------------------

DEAD_BROKER = "redis://127.0.0.1:1/0"  # nothing listens on port 1


def _point_celery_at(url: str, backend: str) -> None:
    """This process's Celery app publishes to ``url`` from now on (its pools and result backend made anew)."""
    from webapp.celery import app

    app.conf.broker_url, app.conf.result_backend = url, backend
    # Celery caches its connection pools and backend on first use: drop them, as it does itself after a fork.
    app._pool = None
    app.amqp._producer_pool = None
    app._backend_cache = None
    app._local.__dict__.pop("backend", None)


@contextmanager
def broker_at(url: str) -> Iterator[str]:
    """Point this process's Celery app, broker and result backend, at ``url``; the shared Redis is left running
    (a worker fixture may be using it) and the app is pointed back at it afterwards."""
    from webapp.celery import app

    saved = (app.conf.broker_url, app.conf.result_backend)
    _point_celery_at(url, url)
    try:
        yield url
    finally:
        _point_celery_at(*saved)


@pytest.fixture
def dead_broker() -> Iterator[str]:
    """Redis is down: nothing listens where the app publishes its tasks."""
    with broker_at(DEAD_BROKER) as url:
        yield url


@pytest.fixture
def silent_broker() -> Iterator[str]:
    """A broker that accepts connections and never answers (a hung Redis, a half-open connection)."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                accepted.append(server.accept()[0])
            except OSError:  # closed
                return

    threading.Thread(target=accept, daemon=True).start()
    try:
        with broker_at(f"redis://127.0.0.1:{server.getsockname()[1]}/0") as url:
            yield url
    finally:
        server.close()
        for conn in accepted:
            conn.close()


@pytest.fixture
def demo(db, tmp_path, settings):  # type: ignore[no-untyped-def]
    """The demo collection (6 abstracts, a MEDIC slice) with a sparse index built and active, no suggestions
    stored yet. A test module that needs more (roles, suggestions) defines its own ``demo``."""
    from webapp.corpus.models import Collection
    from webapp.demo.load import load_demo
    from webapp.linking.registry import forget_all
    from webapp.training.services import activate_index, build_index, create_index_version
    from webapp.vocab.models import Dictionary

    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    forget_all()
    load_demo(tmp_path / "demo", log=lambda message: None)
    activate_index(build_index(create_index_version(Dictionary.objects.get(slug="medic-demo").latest_version(), None)).pk)
    yield Collection.objects.get(slug="demo")
    forget_all()
