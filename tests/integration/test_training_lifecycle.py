"""A run's life as methods of TrainingRun (row locks, one ending each), and the stale-run sweep: it runs in
the workers (on worker start and on the beat schedule), never in a web request."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.integration.test_training_runs import TINY, _collection, _dictionary, recover_stale_runs
from webapp.corpus.models import Collection
from webapp.training.models import TrainingRun
from webapp.training.runs import start_run
from webapp.vocab.models import Dictionary

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def world(db) -> None:  # type: ignore[no-untyped-def]
    _collection(_dictionary())


def _run() -> TrainingRun:
    return start_run(Dictionary.objects.get(slug="mini"), Collection.objects.filter(slug="gold"), TINY, send=False)


def _running(run: TrainingRun, heartbeat_ago: timedelta = timedelta(0)) -> TrainingRun:
    assert run.start(worker="gpu-1", device="cpu", task_id="t-1")
    TrainingRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - heartbeat_ago, phase="biosyn", step=3,
                                                 total_steps=9)
    run.refresh_from_db()
    return run


def test_a_run_starts_once() -> None:
    run = _run()
    assert run.start(worker="gpu-1", device="cpu", task_id="t-1")
    assert (run.state, run.worker, run.device, run.task_id, run.phase) == ("running", "gpu-1", "cpu", "t-1", "snapshot")
    assert run.started_at == run.heartbeat_at is not None
    duplicate = TrainingRun.objects.get(pk=run.pk)
    assert not duplicate.start(worker="gpu-2", device="cuda") and duplicate.state == "running"
    assert TrainingRun.objects.get(pk=run.pk).worker == "gpu-1"


def test_a_run_ends_once_and_a_later_ending_changes_nothing() -> None:
    run = _running(_run())
    assert run.fail("worker lost") and run.state == "failed" and run.finished_at is not None
    assert run.log_tail.endswith("worker lost")
    assert not run.stop_cancelled() and not TrainingRun.objects.get(pk=run.pk).fail("again")
    assert TrainingRun.objects.get(pk=run.pk).error == "worker lost"
    with pytest.raises(ValueError, match="not running"):
        run.finish(None, None, {})  # type: ignore[arg-type]


def test_cancel_stops_a_queued_run_at_once_and_asks_a_running_one() -> None:
    queued = _run()
    assert queued.cancel() and queued.state == "cancelled" and queued.error == "cancelled before it started"
    running = _running(_run())
    assert not running.cancel() and running.state == "running" and running.cancel_requested
    assert running.stop_cancelled("worker log") and running.state == "cancelled" and running.log_tail == "worker log"
    assert not running.cancel() and running.state == "cancelled"


def test_the_sweep_fails_running_runs_without_a_recent_heartbeat() -> None:
    quiet = _running(_run(), heartbeat_ago=timedelta(minutes=10))
    beating = _running(_run())
    queued = _run()  # queued: no worker yet, not stale
    assert quiet.lost_reason().startswith("worker lost (killed or crashed) at biosyn step 3/9, epoch 0/0, on gpu-1")
    assert recover_stale_runs() == [quiet.pk]
    assert recover_stale_runs(timedelta(0)) == [beating.pk]
    assert TrainingRun.objects.get(pk=queued.pk).state == "queued"


def test_the_run_pages_never_sweep(alice_client) -> None:  # type: ignore[no-untyped-def]
    run = _running(_run(), heartbeat_ago=timedelta(minutes=10))
    assert alice_client.get(f"/training/runs/{run.pk}/").status_code == 200
    assert alice_client.get(f"/training/runs/{run.pk}/", headers={"HX-Request": "true", "HX-Target": "run-progress"}).status_code == 200
    assert alice_client.get("/training/").status_code == 200
    assert alice_client.get(f"/api/training-runs/{run.pk}/").status_code == 200
    assert TrainingRun.objects.get(pk=run.pk).state == "running"


def test_the_workers_sweep_every_minute_on_the_interactive_queue() -> None:
    from tasks.jobs import sweep_jobs
    from webapp.celery import SWEEP_EVERY_S, app

    [entry] = [e for e in app.conf.beat_schedule.values() if e["task"] == "tasks.jobs.sweep_jobs"]
    assert entry["schedule"] == SWEEP_EVERY_S == 60.0
    # The queue of short work, whose worker no training run holds up.
    assert app.amqp.router.route({}, "tasks.jobs.sweep_jobs")["queue"].name == "interactive"
    assert app.amqp.router.route({}, "tasks.training.train_task")["queue"].name == "gpu"

    stale = _running(_run(), heartbeat_ago=timedelta(minutes=10))
    assert sweep_jobs.run()[0].startswith(f"training run {stale.pk} failed: worker lost")
    assert TrainingRun.objects.get(pk=stale.pk).state == "failed"
