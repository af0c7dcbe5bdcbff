"""Jobs whose worker died are failed at once, with the reason: imports, evaluations and word-vector uploads run
under a lease (a PostgreSQL advisory lock of the runner's session, webapp.jobs.lease) that dies with the runner's
process, and the sweep (webapp.jobs.sweep) fails a running job nobody holds the lease of. The fault test
SIGKILLs a real worker mid-import: the import is failed within seconds, and nothing of it was written."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from unittest.mock import patch

import pytest

from tasks.imports import run_import
from tests.integration.test_training_runs import _start_worker, _stop
from webapp.core.queue import job_task_id, send_now
from webapp.core.uploads import new_upload_folder
from webapp.corpus.models import Collection, Document, Mention
from webapp.imports.models import ImportJob
from webapp.jobs.lease import JobLease, leased
from webapp.jobs.sweep import fail_lost_jobs
from webapp.linking.models import IndexVersion
from webapp.training.models import Evaluation, WordVectorUpload
from webapp.vocab.models import Dictionary, DictionaryVersion

PROMISE_S = 30.0  # a killed worker's job is failed within this of a worker (or launcher) sweeping


def _import(state: str = ImportJob.State.RUNNING, **fields: object) -> ImportJob:
    return ImportJob.objects.create(import_kind="documents", path="/nowhere/x.txt", params={"format": "pubtator"}, state=state,
                                    **fields)


# --- the lease ----------------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_lease_is_seen_while_held_and_one_holder_at_a_time() -> None:
    with JobLease(7) as lease:
        assert lease.held and leased([7, 8]) == {7}
        started = time.monotonic()
        with JobLease(7, wait_s=0.5) as second:
            assert not second.held  # a duplicate delivery of the same job, after trying for wait_s
        assert time.monotonic() - started >= 0.5
    assert leased([7]) == set()


@pytest.mark.django_db
def test_a_running_import_without_a_lease_is_failed_with_the_reason() -> None:
    dead = _import(progress=1200, progress_total=5000)
    alive = _import()
    queued = _import(state=ImportJob.State.QUEUED)
    with JobLease(alive.pk):
        done = fail_lost_jobs()
        assert fail_lost_jobs() == []  # once
    assert done == [f"import {dead.pk} failed: {ImportJob.objects.get(pk=dead.pk).message}"]
    dead.refresh_from_db()
    assert dead.state == ImportJob.State.FAILED and dead.finished_at is not None
    assert dead.message == ("the worker running it stopped (killed, out of memory, or its machine went down) after "
                            "1,200 of 5,000 records; nothing of this import was written (an import is one "
                            "transaction). Import the file again.")
    assert ImportJob.objects.get(pk=alive.pk).state == ImportJob.State.RUNNING
    assert ImportJob.objects.get(pk=queued.pk).state == ImportJob.State.QUEUED
    fail_lost_jobs()  # the lease ended: so does the job
    alive.refresh_from_db()
    assert alive.state == ImportJob.State.FAILED
    assert "stopped (killed, out of memory, or its machine went down) before it had read a record;" in alive.message


@pytest.mark.django_db
def test_an_abandoned_import_upload_is_removed(settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings.ARTIFACT_ROOT = tmp_path
    path = new_upload_folder() / "x.txt"
    path.write_text("1|t|Gout\n\n")
    job = ImportJob.objects.create(import_kind="documents", path=str(path), params={}, state=ImportJob.State.RUNNING)
    fail_lost_jobs()
    assert ImportJob.objects.get(pk=job.pk).state == ImportJob.State.FAILED
    assert not path.parent.exists()


@pytest.mark.django_db
def test_abandoned_evaluations_and_word_vector_uploads_are_failed(tmp_path: Path) -> None:
    d = Dictionary.objects.create(slug="mini", title="Mini")
    v = DictionaryVersion.objects.create(dictionary=d, release="1", source_format="demo", checksum="s" * 64)
    index = IndexVersion.objects.create(dictionary=d, dictionary_version=v, artifact_path=str(tmp_path), state="active")
    collection = Collection.objects.create(slug="c", title="C", dictionary=d)
    evaluation = Evaluation.objects.create(index_version=index, collection=collection, state="running")
    stored = tmp_path / "up" / "vectors.vec"
    stored.parent.mkdir()
    stored.write_text("2 2\na 1 2\nb 3 4\n")
    upload = WordVectorUpload.objects.create(file_name="vectors.vec", path=str(stored), state="running")

    fail_lost_jobs()

    evaluation.refresh_from_db()
    upload.refresh_from_db()
    assert (evaluation.state, upload.state) == ("failed", "failed")
    assert evaluation.error.startswith("the worker running it stopped") and "Evaluate again" in evaluation.error
    assert upload.error.startswith("vectors.vec: the worker running it stopped") and "Upload it again" in upload.error


# --- the runner ---------------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_job_whose_lease_another_holds_is_left_to_it() -> None:
    job = _import(state=ImportJob.State.QUEUED)
    with JobLease(job.pk), patch("webapp.jobs.lease.WAIT_S", 0.3):  # another worker runs it (a message delivered twice)
        assert run_import(job.pk) == "taken"
    assert ImportJob.objects.get(pk=job.pk).state == ImportJob.State.QUEUED


@pytest.mark.django_db(transaction=True)  # the sweep's hold on the lease ends with its transaction
def test_a_message_delivered_again_after_the_sweep_failed_its_job_does_nothing() -> None:
    job = _import()
    fail_lost_jobs()
    message = ImportJob.objects.get(pk=job.pk).message
    assert run_import(job.pk) == ImportJob.State.FAILED
    assert ImportJob.objects.get(pk=job.pk).message == message


@pytest.mark.django_db
def test_a_running_import_is_run_again_by_a_new_delivery(tmp_path: Path) -> None:
    """A pool child killed mid-import: Celery delivers the message again (reject_on_worker_lost) and the new try,
    taking the free lease, imports the file from the start (the first try's transaction rolled back)."""
    path = tmp_path / "one.txt"
    path.write_text("1|t|Gout\n1|a|Gout flares.\n1\t0\t4\tGout\tDisease\tD006073\n\n")
    job = ImportJob.objects.create(import_kind="documents", path=str(path), params={"format": "pubtator", "collection_slug": "g"},
                                   state=ImportJob.State.RUNNING, progress=1)
    assert run_import(job.pk) == ImportJob.State.SUCCEEDED
    assert Document.objects.filter(collection__slug="g").count() == 1


# --- the fault: a worker SIGKILLed mid-import ----------------------------------------------------------------------


def _pubtator(path: Path, documents: int) -> Path:
    with path.open("w") as out:
        for i in range(documents):
            out.write(f"{i}|t|Gout and asthma in patient {i}\n{i}|a|Gout flares; asthma attacks.\n"
                      f"{i}\t0\t4\tGout\tDisease\tD006073\n{i}\t9\t15\tasthma\tDisease\tD001249\n\n")
    return path


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_an_import_whose_worker_is_killed_is_failed_within_seconds_and_leaves_nothing(tmp_path: Path) -> None:
    path = _pubtator(tmp_path / "big.txt", 60_000)
    first = _start_worker(tmp_path, "prefork")
    second = None
    try:
        job = ImportJob.objects.create(import_kind="documents", path=str(path),
                                       params={"format": "pubtator", "collection_slug": "killed"})
        send_now("tasks.imports.run_import", job.pk, queue=first.queue, task_id=job_task_id(job))
        deadline = time.monotonic() + 120
        while True:
            job.refresh_from_db()
            if job.state == ImportJob.State.RUNNING and job.progress > 0:
                break
            assert job.state in (ImportJob.State.QUEUED, ImportJob.State.RUNNING), job.message
            assert time.monotonic() < deadline, "the import did not start"
            time.sleep(0.1)
        _stop(first.process, signal.SIGKILL)  # the whole worker, main process and pool child
        killed = time.monotonic()
        second = _start_worker(tmp_path, "prefork")  # its own queue: the lost message is not re-delivered to it
        while ImportJob.objects.get(pk=job.pk).state == ImportJob.State.RUNNING and time.monotonic() < killed + 60:
            time.sleep(0.2)
        failed = time.monotonic()
    finally:
        _stop(first.process)
        if second is not None:
            _stop(second.process)
    job.refresh_from_db()
    assert job.state == ImportJob.State.FAILED, "the killed worker's import is still running a minute later"
    assert job.message.startswith("the worker running it stopped (killed, out of memory, or its machine went down) "
                                  "after ") and job.message.endswith("Import the file again.")
    assert failed - killed <= PROMISE_S, f"failed {failed - killed:.1f} s after the kill"
    # One transaction: the killed import wrote nothing, not even its collection.
    assert not Collection.objects.filter(slug="killed").exists()
    assert not Mention.objects.filter(document__collection__slug="killed").exists()
