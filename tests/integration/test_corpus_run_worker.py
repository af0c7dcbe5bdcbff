"""A corpus run on a real Celery worker, killed mid-run: the worker dies with SIGKILL inside the second chunk (after
the first chunk committed), a new worker starts, the sweep queues the lost chunk again, and the run ends with exactly
the mentions and links of a run that was not interrupted: nothing lost, nothing doubled.

The kill lands at a known point without any hook in the product: the test holds a row lock on the second chunk's
second document, so the worker, claiming the chunk's documents together (webapp.curation.corpus_runs.group), waits
on it when it is killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.db import DEFAULT_DB_ALIAS, connection, connections

from tests.integration.conftest import PROJECT_ROOT, database_url
from tests.integration.corpus_run_helpers import notes_world, written
from tests.integration.detection_helpers import wait_for
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.curation.corpus_runs.jobs import start_run
from webapp.curation.corpus_runs.scope import RunScope
from webapp.jobs.lease import leased
from webapp.jobs.models import Job
from webapp.jobs.sweep import fail_lost_jobs
from webapp.linking.registry import forget_all

pytestmark = [pytest.mark.worker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@contextmanager
def solo_worker(queue: str, log: Path) -> Iterator[subprocess.Popen]:  # type: ignore[type-arg]
    """A real worker whose task runs in its own process (``-P solo``), in a session of its own so that a SIGKILL to
    its group kills everything it runs, as the OOM killer or a lost machine would."""
    from webapp.celery import app

    env = dict(os.environ, DATABASE_URL=database_url(connection.settings_dict), DB_CONN_MAX_AGE="0",
               CELERY_BROKER_URL=django_settings.CELERY_BROKER_URL,
               CELERY_RESULT_BACKEND=django_settings.CELERY_RESULT_BACKEND, TASK_QUEUE_OVERRIDE=queue)
    name = f"{queue}-{uuid.uuid4().hex[:4]}"
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "webapp", "worker", "-Q", queue, "-P", "solo", "-n", f"{name}@%h",
         "--loglevel", "INFO"],
        cwd=PROJECT_ROOT, env=env, stdout=open(log, "ab"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while not app.control.ping(destination=[f"{name}@{os.uname().nodename}"], timeout=1.0):
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.5)
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=20)


@contextmanager
def row_locked(document_id: int) -> Iterator[None]:
    """The document's row locked FOR UPDATE by another session, until the block ends."""
    holder = connections.create_connection(DEFAULT_DB_ALIAS)
    holder.set_autocommit(False)
    try:
        with holder.cursor() as cursor:
            cursor.execute("SELECT id FROM corpus_document WHERE id = %s FOR UPDATE", [document_id])
        yield
    finally:
        holder.rollback()
        holder.close()


def _finished(run: Job) -> bool:
    return Job.objects.get(pk=run.pk).is_finished


def _wipe(collection: Collection) -> None:
    """What a run wrote, removed: the notes as they were imported (no mention, not detected)."""
    Mention.objects.filter(document__collection=collection).delete()
    Document.objects.filter(collection=collection).update(detection_state="none", detected_at=None, detection_model="")


@pytest.fixture
def queue() -> Iterator[str]:
    from webapp.celery import app

    name = f"test-corpus-{uuid.uuid4().hex[:8]}"
    yield name
    with app.connection_for_write() as conn:
        conn.default_channel.queue_delete(name)


def test_a_run_whose_worker_is_killed_ends_with_the_counts_of_one_that_was_not(queue: str, settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    forget_all()
    settings.TASK_QUEUE_OVERRIDE = queue
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    collection = notes_world(tmp_path)
    documents = list(collection.documents.order_by("pk").values_list("pk", flat=True))
    log = tmp_path / "worker.log"

    with solo_worker(queue, log) as first:
        # The run nobody interrupts: three chunks of two notes.
        clean = start_run(collection, RunScope(), chunk_size=2)
        wait_for(lambda: _finished(clean), what="the uninterrupted run")
        assert Job.objects.get(pk=clean.pk).state == "succeeded", log.read_text()[-3000:]
        expected = written(collection)
        assert expected[0] and expected[1]
        _wipe(collection)
        assert written(collection) == ([], [])

        # The same run again, its worker killed inside the second chunk, after the first chunk committed.
        with row_locked(documents[3]):
            run = start_run(collection, RunScope(), chunk_size=2)
            chunks = list(Job.objects.filter(parent=run).order_by("pk"))
            wait_for(lambda: Job.objects.get(pk=chunks[0].pk).state == "succeeded"
                     and leased([chunks[1].pk]) == {chunks[1].pk}, what="the first chunk, and the second begun")
            time.sleep(0.5)  # the worker waits on the locked note
            os.killpg(first.pid, signal.SIGKILL)
            first.wait(timeout=30)
    assert first.returncode == -signal.SIGKILL
    half = Mention.objects.filter(document__collection=collection).count()
    assert 0 < half < len(expected[0])  # something of the run was written, not all of it
    states = [Job.objects.get(pk=c.pk).state for c in chunks]
    # "queued": another worker's sweep (the suite's other workers share this database) may already have found the
    # lost chunk and sent it again, to this test's queue, where the chunk was first sent.
    assert states[0] == "succeeded" and states[1] in ("running", "queued") and states[2] == "queued", states
    assert Job.objects.get(pk=run.pk).state == "running"

    with solo_worker(queue, log):  # a new worker; its sweeper (and ours) finds the lost chunk and queues it again
        wait_for(lambda: bool(fail_lost_jobs()) or _finished(run) or Job.objects.get(pk=chunks[1].pk).attempts > 1,
                 what="the sweep")
        wait_for(lambda: _finished(run), what="the rest of the run")

    ended = Job.objects.get(pk=run.pk)
    assert (ended.state, ended.progress, ended.progress_total) == ("succeeded", 6, 6), ended.error
    assert Job.objects.get(pk=chunks[1].pk).attempts == 2  # the lost chunk was redone, not failed
    assert written(collection) == expected  # the same mentions and links, none doubled
    assert Mention.objects.filter(document__collection=collection).count() == len(expected[0])
    assert Link.objects.filter(mention__document__collection=collection).count() == len(expected[1])
