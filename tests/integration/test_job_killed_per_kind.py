"""Every kind of job ends the same way when the process running it is killed mid-job: ``failed``, with its kind's
account of what was lost, its leftovers tidied (an upload removed, an index version failed) — found by the one job
sweep (webapp.jobs.sweep), whether the job proves it is alive by a lease (imports, evaluations, uploads, index
builds) or by a heartbeat (training runs).

Each job is run by its real runner in a process of its own, on the test database; only the slow middle of the work
is replaced by a long sleep, so that the process is certainly killed mid-job. Then SIGKILL, as the OOM killer does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection

from tests.integration.conftest import database_url
from webapp.core.uploads import new_upload_folder
from webapp.corpus.models import Collection, Document
from webapp.imports.models import ImportJob
from webapp.jobs.lease import leased
from webapp.jobs.models import Job
from webapp.jobs.sweep import fail_lost_jobs
from webapp.linking.models import IndexVersion
from webapp.training.index_jobs import new_build_job
from webapp.training.models import Evaluation, TrainingRun, WordVectorUpload
from webapp.vocab.models import Dictionary, DictionaryVersion

ROOT = Path(__file__).resolve().parents[2]
LOST = "the worker running it stopped (killed, out of memory, or its machine went down)"

# The runner of each kind, with the slow middle of its work replaced by a long sleep.
RUNNERS = {
    "import": ("tasks.imports._run", "from tasks.imports import run_import as run"),
    "evaluation": ("webapp.training.evaluation.evaluate_linker_outcomes",
                   "from webapp.training.evaluation import run_evaluation as run"),
    "word-vectors": ("webapp.training.word_vectors.import_word_vectors",
                     "from webapp.training.word_vectors import run_upload as run"),
    "index-build": ("webapp.training.services._build",
                    "from webapp.linking.models import IndexVersion\n"
                    "from webapp.training.services import build_index\n"
                    "run = lambda pk: build_index(IndexVersion.objects.get(build_id=pk))"),
    "training": ("webapp.training.execution._train", "from webapp.training.execution import run_training as run"),
    "detection": ("webapp.curation.services.detection.detect_documents",
                  "from webapp.curation.services.detection import detect_batch\n"
                  "from webapp.jobs.models import Job\n"
                  "run = lambda pk: detect_batch(pk, Job.objects.get(pk=pk).arguments['documents'])"),
}
SCRIPT = """
import sys, time, django
django.setup()
from unittest import mock
{import_run}
with mock.patch({target!r}, side_effect=lambda *a, **k: time.sleep(600)), \\
     mock.patch("webapp.training.evaluation._evaluation_linker", return_value=None):
    run({pk})
"""


def _run_and_kill(kind: str, pk: int, alive: Callable[[], bool]) -> None:
    target, import_run = RUNNERS[kind]
    script = SCRIPT.format(import_run=import_run, target=target, pk=pk)
    env = os.environ | {"DATABASE_URL": database_url(connection.settings_dict), "DJANGO_SETTINGS_MODULE": "webapp.settings"}
    process = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while not alive():
            assert process.poll() is None, process.stdout.read().decode() if process.stdout else ""
            assert time.monotonic() < deadline, f"{kind} job {pk} never started"
            time.sleep(0.2)
        time.sleep(0.5)  # well inside the work
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL


def _running(pk: int) -> bool:
    return Job.objects.filter(pk=pk, state=Job.State.RUNNING).exists()


def _leased_and_running(pk: int) -> bool:
    return _running(pk) and leased([pk]) == {pk}


@pytest.fixture
def mini(tmp_path: Path) -> tuple[Dictionary, DictionaryVersion, IndexVersion, Collection]:
    d = Dictionary.objects.create(slug="mini", title="Mini")
    v = DictionaryVersion.objects.create(dictionary=d, release="1", source_format="demo", checksum="k" * 64)
    index = IndexVersion.objects.create(dictionary=d, dictionary_version=v, artifact_path=str(tmp_path), state="active")
    return d, v, index, Collection.objects.create(slug="gold", title="Gold", dictionary=d)


def _sweep_until_failed(pk: int, stale_after: timedelta = timedelta(seconds=20)) -> Job:
    """The sweep, run the way the workers' thread runs it; a dead runner's lease is gone at once, a heartbeat only
    once it is stale."""
    deadline = time.monotonic() + 30
    while Job.objects.get(pk=pk).state == Job.State.RUNNING:
        assert time.monotonic() < deadline, f"job {pk} still running 30 s after its process was killed"
        fail_lost_jobs(stale_after)
        time.sleep(0.2)
    return Job.objects.get(pk=pk)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)  # the runner's process must see the rows
def test_a_killed_import_is_failed_and_its_upload_removed(settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings.ARTIFACT_ROOT = tmp_path
    path = new_upload_folder() / "big.txt"
    path.write_text("1|t|Gout\n\n")
    job = ImportJob.objects.create(import_kind="documents", path=str(path), params={"format": "pubtator"})
    _run_and_kill("import", job.pk, lambda: _leased_and_running(job.pk))
    ended = _sweep_until_failed(job.pk)
    assert ended.state == Job.State.FAILED and ended.error.startswith(LOST)
    assert "nothing of this import was written" in ended.error and not path.parent.exists()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_killed_evaluation_is_failed(mini) -> None:  # type: ignore[no-untyped-def]
    _, _, index, collection = mini
    evaluation = Evaluation.objects.create(index_version=index, collection=collection)
    _run_and_kill("evaluation", evaluation.pk, lambda: _leased_and_running(evaluation.pk))
    ended = _sweep_until_failed(evaluation.pk)
    assert ended.state == Job.State.FAILED and ended.error.startswith(LOST) and "Evaluate again" in ended.error


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_killed_word_vector_upload_is_failed_and_its_file_removed(settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings.ARTIFACT_ROOT = tmp_path
    stored = new_upload_folder() / "vectors.vec"
    stored.write_text("2 2\na 1 2\nb 3 4\n")
    upload = WordVectorUpload.objects.create(name="v", file_name="vectors.vec", path=str(stored))
    _run_and_kill("word-vectors", upload.pk, lambda: _leased_and_running(upload.pk))
    ended = _sweep_until_failed(upload.pk)
    assert ended.state == Job.State.FAILED and ended.error.startswith(f"vectors.vec: {LOST}")
    assert not stored.exists()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_killed_index_build_is_failed_and_so_is_its_index_version(mini) -> None:  # type: ignore[no-untyped-def]
    d, v, _, _ = mini
    index = IndexVersion.objects.create(dictionary=d, dictionary_version=v, build=new_build_job())
    _run_and_kill("index-build", index.build_id, lambda: _leased_and_running(index.build_id))
    ended = _sweep_until_failed(index.build_id)
    assert ended.state == Job.State.FAILED and ended.error.startswith(LOST)
    index.refresh_from_db()
    assert index.state == IndexVersion.State.FAILED and index.error == ended.error


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_killed_detection_batch_is_failed_and_so_are_its_documents(mini) -> None:  # type: ignore[no-untyped-def]
    d, _, _, _ = mini
    collection = Collection.objects.create(slug="notes", title="Notes", dictionary=d)
    documents = [Document.objects.create(collection=collection, external_id=f"n{i}", text="Gout.",
                                         detection_state=Document.DetectionState.QUEUED) for i in range(2)]
    job = Job.objects.create(kind="detection", arguments={"collection": "notes", "documents": [x.pk for x in documents]})
    _run_and_kill("detection", job.pk, lambda: _leased_and_running(job.pk))
    ended = _sweep_until_failed(job.pk)
    assert ended.state == Job.State.FAILED and ended.error.startswith(f"{LOST} while detecting mentions")
    for document in documents:
        document.refresh_from_db()
        assert document.detection_state == Document.DetectionState.FAILED
        assert document.detection_error.endswith("; use Detect again")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_killed_training_run_is_failed_once_its_heartbeat_is_stale(mini) -> None:  # type: ignore[no-untyped-def]
    d, _, _, collection = mini
    run = TrainingRun.objects.create(dictionary=d, params={"epochs": 1})
    run.collections.set([collection])
    _run_and_kill("training", run.pk, lambda: _running(run.pk))
    assert fail_lost_jobs() == []  # its heartbeat is still fresh: nobody can know yet
    time.sleep(1.5)
    ended = _sweep_until_failed(run.pk, stale_after=timedelta(seconds=1))
    assert ended.state == Job.State.FAILED and ended.error.startswith("worker lost (killed or crashed)")
    run.refresh_from_db()
    assert run.log_tail.endswith(run.error)
