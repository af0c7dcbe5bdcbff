"""A lost chunk is sent again to the queue it was first sent to, whichever process's sweep finds it: a sweep in a
process with a private queue of its own (TASK_QUEUE_OVERRIDE) must not carry another run's chunk off to it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from tests.integration.corpus_run_helpers import notes_world
from webapp.celery import app
from webapp.curation.corpus_runs.jobs import requeue_lost_chunk, start_run
from webapp.curation.corpus_runs.scope import RunScope
from webapp.jobs.models import Job
from webapp.linking.registry import forget_all

pytestmark = pytest.mark.django_db


@pytest.fixture
def queues() -> Iterator[tuple[str, str]]:
    names = (f"test-first-{uuid.uuid4().hex[:8]}", f"test-other-{uuid.uuid4().hex[:8]}")
    yield names
    with app.connection_for_write() as conn:
        for name in names:
            conn.default_channel.queue_delete(name)


def _waiting(queue: str) -> int:
    with app.connection_for_write() as conn:
        return int(conn.default_channel.queue_declare(queue, passive=False).message_count)


def test_a_lost_chunk_goes_back_to_the_queue_it_was_sent_to(queues, settings, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                            django_capture_on_commit_callbacks) -> None:
    first, other = queues
    forget_all()
    settings.TASK_QUEUE_OVERRIDE = first
    run = start_run(notes_world(tmp_path), RunScope(), chunk_size=2, send=False)
    chunk = run.children.order_by("pk").first()
    assert chunk is not None and chunk.arguments["queue"] == first
    Job.objects.filter(pk=chunk.pk).update(state=Job.State.RUNNING, attempts=1)
    chunk.refresh_from_db()

    settings.TASK_QUEUE_OVERRIDE = other  # the sweep of a process with a queue of its own
    with django_capture_on_commit_callbacks(execute=True):
        assert requeue_lost_chunk(chunk, "worker lost") is False
    assert Job.objects.get(pk=chunk.pk).state == Job.State.QUEUED
    assert (_waiting(first), _waiting(other)) == (1, 0)
    assert django_settings.TASK_QUEUE_OVERRIDE == other
