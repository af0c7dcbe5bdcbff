"""Short work someone waits on is routed to the ``interactive`` queue, which has a worker of its own (the launcher's,
compose's): it never waits behind a training run, an index build or a long import."""

from __future__ import annotations

import pytest

from webapp.celery import app


def _queue(task: str) -> str:
    return str(app.amqp.router.route({}, task)["queue"].name)


@pytest.mark.parametrize("task", [
    "tasks.training.evaluate_task", "tasks.jobs.sweep_jobs",
    "tasks.loop.gate_run_task", "tasks.loop.recheck_gates_task", "tasks.health.ping",
])
def test_short_work_goes_to_the_interactive_queue(task: str) -> None:
    assert _queue(task) == "interactive"


@pytest.mark.parametrize(("task", "queue"), [
    ("tasks.training.train_task", "gpu"), ("tasks.indexing.build_index_task", "gpu"),
    ("tasks.imports.run_import", "default"), ("tasks.curation.suggest_links_task", "default"),
    ("tasks.detection.detect_mentions", "default"),  # an import's batches; one batch is sent to interactive by hand
])
def test_long_work_stays_on_its_queues(task: str, queue: str) -> None:
    assert _queue(task) == queue


def test_the_beat_sends_its_sweeps_to_the_interactive_queue() -> None:
    for name, entry in app.conf.beat_schedule.items():
        assert entry["options"]["queue"] == "interactive", name
