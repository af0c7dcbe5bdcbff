"""The sweep of queued jobs: a job left queued whose message the broker lost (Redis restarted without persistence,
a web process died between commit and publish) is queued again with the reason recorded, and a worker runs it;
a job whose message is still waiting, a young one, and an index being built elsewhere are left alone; a job that
can never run is failed with the reason. Every job kind with a queued state is swept. Upload folders that no
unfinished job names are removed once stale.

Real Redis (its queues and unacked messages are read), real PostgreSQL, a real worker for the end-to-end case.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection

from tests.integration.conftest import PROJECT_ROOT, database_url
from webapp.core.queue import broker_task_ids, job_task_id
from webapp.corpus.models import Collection
from webapp.imports.jobs import queue_import
from webapp.imports.models import ImportJob
from webapp.jobs.models import Job
from webapp.jobs.sweep import remove_orphan_uploads, requeue_lost_messages
from webapp.linking.models import IndexVersion
from webapp.training.index_jobs import index_build_lock, new_build_job
from webapp.training.models import Evaluation, TrainingRun, WordVectorUpload
from webapp.vocab.models import Dictionary, DictionaryVersion

pytestmark = pytest.mark.django_db(transaction=True)

TINY_MEDIC = "Asthma\tMESH:D001249\t\tA bronchial disorder.\t\t\t\tBronchial asthma\t\n"
STALE = timedelta(minutes=10)  # older than QUEUED_JOB_SWEEP_AFTER_S (5 min)


@pytest.fixture
def idle_queue(settings) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """Tasks go to a private queue no worker reads: a message published there waits, as behind a long run."""
    from webapp.celery import app

    name = f"idle-{uuid.uuid4().hex[:8]}"
    settings.TASK_QUEUE_OVERRIDE = name
    yield name
    with app.connection_for_write() as conn:
        conn.default_channel.queue_delete(name)


def aged(row, by: timedelta = STALE):  # type: ignore[no-untyped-def]
    """The row as if it had been queued ``by`` ago."""
    job = Job.objects.get(pk=row.build_id if isinstance(row, IndexVersion) else row.pk)
    Job.objects.filter(pk=job.pk).update(created_at=job.created_at - by)
    row.refresh_from_db()
    return row


def lost_import(tmp_path: Path) -> ImportJob:
    """An import job whose message never reached the broker (its row only)."""
    path = tmp_path / "tiny.tsv"
    path.write_text(TINY_MEDIC)
    return aged(ImportJob.objects.create(import_kind="dictionary", path=str(path), params={"dictionary_slug": "tiny"}))


@pytest.fixture
def mini(db) -> DictionaryVersion:  # type: ignore[no-untyped-def]
    dictionary = Dictionary.objects.create(slug="mini", title="Mini")
    return DictionaryVersion.objects.create(dictionary=dictionary, release="1", source_format="medic", checksum="s" * 64)


# --- lost, waiting, young ---------------------------------------------------------------------------------------


@pytest.mark.worker
def test_a_job_whose_message_was_lost_is_queued_again_and_a_worker_runs_it(  # type: ignore[no-untyped-def]
    celery_worker_process, settings, tmp_path: Path
) -> None:
    settings.TASK_QUEUE_OVERRIDE = celery_worker_process.queue
    job = lost_import(tmp_path)

    assert requeue_lost_messages() == [f"import {job.pk} queued again"]

    deadline = time.monotonic() + 60
    while ImportJob.objects.get(pk=job.pk).state in (ImportJob.State.QUEUED, ImportJob.State.RUNNING):
        assert time.monotonic() < deadline, "the worker never ran the job queued again"
        time.sleep(0.2)
    job.refresh_from_db()
    assert job.state == ImportJob.State.SUCCEEDED, job.message
    assert requeue_lost_messages() == []


@pytest.mark.worker
def test_a_worker_that_starts_queues_again_what_was_lost_before_it(settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Redis restarted empty, then a worker starts: it finds the job nobody will run and runs it."""
    from webapp.celery import app

    job = lost_import(tmp_path)
    queue = f"test-start-{uuid.uuid4().hex[:8]}"
    env = dict(os.environ, DATABASE_URL=database_url(connection.settings_dict), CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
               CELERY_RESULT_BACKEND=settings.CELERY_RESULT_BACKEND, DB_CONN_MAX_AGE="0", TASK_QUEUE_OVERRIDE=queue)
    log = tmp_path / "worker.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "webapp", "worker", "-Q", queue, "-c", "1", "-n", f"{queue}@%h",
         "--loglevel", "INFO"], cwd=PROJECT_ROOT, env=env, stdout=open(log, "wb"), stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 90
        while ImportJob.objects.get(pk=job.pk).state in (ImportJob.State.QUEUED, ImportJob.State.RUNNING):
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.3)
    finally:
        process.terminate()
        process.wait(timeout=30)
        with app.connection_for_write() as conn:
            conn.default_channel.queue_delete(queue)
    assert ImportJob.objects.get(pk=job.pk).state == ImportJob.State.SUCCEEDED
    assert f"import {job.pk} queued again" in log.read_text()


def test_the_reason_is_recorded_on_the_job_queued_again(idle_queue, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    job = lost_import(tmp_path)

    requeue_lost_messages()

    job.refresh_from_db()
    assert job.state == ImportJob.State.QUEUED
    assert job.message.startswith("queued again at ")
    assert "no worker had taken it after 10 min and the task queue no longer held its message" in job.message
    assert job_task_id(job) in broker_task_ids()  # waiting now, under the same task id
    assert requeue_lost_messages() == []  # found waiting: not queued twice


def test_a_job_whose_message_waits_its_turn_is_left_alone(idle_queue, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "tiny.tsv"
    path.write_text(TINY_MEDIC)
    job = queue_import("dictionary", path, {"dictionary_slug": "tiny"})
    assert job_task_id(job) in broker_task_ids()

    assert requeue_lost_messages(older_than=timedelta(0)) == []  # (aging the row would change its task id)
    job.refresh_from_db()
    assert (job.state, job.message) == (ImportJob.State.QUEUED, "")


def test_a_job_queued_moments_ago_is_left_alone(idle_queue, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    job = aged(lost_import(tmp_path), -STALE)  # back to now: its publish may still be on its way

    assert requeue_lost_messages() == []
    assert ImportJob.objects.get(pk=job.pk).message == ""
    assert requeue_lost_messages(older_than=timedelta(0)) == [f"import {job.pk} queued again"]  # the threshold is a setting


# --- every kind ---------------------------------------------------------------------------------------------------


def test_every_kind_of_queued_job_is_swept(idle_queue, mini, settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    collection = Collection.objects.create(slug="gold", title="Gold", dictionary=mini.dictionary, has_gold=True)
    run = aged(TrainingRun.objects.create(dictionary=mini.dictionary))
    building = aged(IndexVersion.objects.create(dictionary=mini.dictionary, dictionary_version=mini, build=new_build_job()))
    ready = IndexVersion.objects.create(dictionary=mini.dictionary, dictionary_version=mini, state=IndexVersion.State.READY)
    evaluation = aged(Evaluation.objects.create(index_version=ready, collection=collection))
    stored = tmp_path / "artifacts" / "uploads" / "word-vectors" / uuid.uuid4().hex / "big.vec"
    stored.parent.mkdir(parents=True)
    stored.write_text("1 2\nasthma 0.1 0.2\n")
    upload = aged(WordVectorUpload.objects.create(name="big", file_name="big.vec", path=str(stored)))
    gone = aged(WordVectorUpload.objects.create(name="gone", file_name="gone.vec", path=str(tmp_path / "gone.vec")))

    done = requeue_lost_messages()

    assert sorted(done) == sorted([
        f"training run {run.pk} queued again", f"index build {building.build_id} queued again",
        f"evaluation {evaluation.pk} queued again", f"word-vector upload {upload.pk} queued again",
        f"word-vector upload {gone.pk} failed: gone.vec: the uploaded file is gone ({tmp_path / 'gone.vec'}); upload it again",
    ])
    waiting = broker_task_ids()
    for row in (run, building.build, evaluation, upload):
        assert job_task_id(row) in waiting, row
        row.refresh_from_db()
    assert run.state == TrainingRun.State.QUEUED and run.error == ""
    for row in (run, building.build, evaluation, upload):
        assert row.note.startswith("queued again at "), row
    assert building.state == IndexVersion.State.BUILDING and ready.state == IndexVersion.State.READY
    gone.refresh_from_db()
    assert gone.state == WordVectorUpload.State.FAILED and "the uploaded file is gone" in gone.error
    assert requeue_lost_messages() == []


def test_an_index_being_built_elsewhere_is_not_queued_again(idle_queue, mini) -> None:  # type: ignore[no-untyped-def]
    """A builder that holds the build's lease (``build_index`` in a shell, say, before it marked the job running)
    is building it: its job is not queued again."""
    index = aged(IndexVersion.objects.create(dictionary=mini.dictionary, dictionary_version=mini, build=new_build_job()))
    holding, release = threading.Event(), threading.Event()

    def builder() -> None:
        try:
            with index_build_lock(index):
                holding.set()
                release.wait(30)
        finally:
            connection.close()  # this thread's own connection

    thread = threading.Thread(target=builder)
    thread.start()
    try:
        assert holding.wait(30)
        assert requeue_lost_messages() == []
    finally:
        release.set()
        thread.join(30)
    assert requeue_lost_messages() == [f"index build {index.build_id} queued again"]


def test_the_sweep_runs_every_minute_on_the_interactive_queue() -> None:
    from webapp.celery import app

    entry = app.conf.beat_schedule["sweep-jobs"]
    assert (entry["task"], entry["schedule"], entry["options"]["queue"]) == ("tasks.jobs.sweep_jobs", 60.0, "interactive")
    assert app.amqp.router.route({}, "tasks.jobs.sweep_jobs")["queue"].name == "interactive"
    assert "tasks.jobs" in app.conf.include


# --- uploads nobody will read -------------------------------------------------------------------------------------


def test_stale_upload_folders_that_no_unfinished_job_names_are_removed(settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    uploads = tmp_path / "artifacts" / "uploads"

    def folder(*parts: str, hours_old: float) -> Path:
        path = uploads.joinpath(*parts, uuid.uuid4().hex)
        path.mkdir(parents=True)
        (path / "file.tsv").write_text(TINY_MEDIC)
        then = time.time() - hours_old * 3600
        os.utime(path, (then, then))
        return path

    orphan, orphan_vectors = folder(hours_old=2), folder("word-vectors", hours_old=2)
    fresh = folder(hours_old=0)  # a request may still be storing it
    queued = folder(hours_old=2)
    ImportJob.objects.create(import_kind="dictionary", path=str(queued / "file.tsv"), params={})
    ended = folder(hours_old=2)
    ImportJob.objects.create(import_kind="dictionary", path=str(ended / "file.tsv"), params={}, state=ImportJob.State.SUCCEEDED)

    removed = remove_orphan_uploads()

    assert len(removed) == 3 and all("no unfinished job names it" in line for line in removed)
    assert not orphan.exists() and not orphan_vectors.exists() and not ended.exists()
    assert fresh.exists() and queued.exists()
