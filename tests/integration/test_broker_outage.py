"""Redis down while a job is queued: the request answers 503 within seconds naming the task queue, the job's row
ends failed with the same reason (never queued for ever), and an uploaded file is not kept. Every endpoint and
page that queues a job: imports (a server path, an upload), training runs, word-vector uploads, index builds.

The shared Redis stays up (a worker fixture may use it): this process's Celery app is pointed at a port where
nothing listens (``dead_broker``), or at a server that accepts and never answers (``silent_broker``).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from webapp.corpus.models import Collection
from webapp.imports.models import ImportJob
from webapp.linking.models import IndexVersion
from webapp.training import word_vectors as word_vector_service
from webapp.training.models import TrainingRun, WordVectorUpload
from webapp.vocab.models import Dictionary, DictionaryVersion

# on_commit hooks must run: the task is published after the row commits.
pytestmark = pytest.mark.django_db(transaction=True)

DOWN = "the task queue (Redis at redis://127.0.0.1:1/0) is not reachable; nothing was queued"
WITHIN_S = 10.0  # a dead Redis used to hold the request 23 s

MEDIC = "Asthma\tMESH:D001249\t\t\t\t\t\t\t\n"


@pytest.fixture(autouse=True)
def _artifacts(settings, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    return settings.ARTIFACT_ROOT


@pytest.fixture
def api(alice) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(alice)
    return client


@pytest.fixture
def mini(db) -> Dictionary:  # type: ignore[no-untyped-def]
    dictionary = Dictionary.objects.create(slug="mini", title="Mini")
    DictionaryVersion.objects.create(dictionary=dictionary, release="1", source_format="medic", checksum="o" * 64)
    Collection.objects.create(slug="gold", title="Gold", dictionary=dictionary, has_gold=True)
    return dictionary


def uploads_left(root: Path) -> list[str]:
    """The stored uploads and their folders (``uploads/word-vectors/`` itself holds the word-vector ones)."""
    found = (root / "uploads").rglob("*") if (root / "uploads").exists() else ()
    return sorted(str(p.relative_to(root)) for p in found if p.name != "word-vectors")


def timed_post(client, url: str, data: dict, **kwargs):  # type: ignore[no-untyped-def]
    started = time.monotonic()
    response = client.post(url, data, **kwargs)
    return response, time.monotonic() - started


def assert_503(response, elapsed: float, message: str = DOWN) -> None:  # type: ignore[no-untyped-def]
    assert response.status_code == 503, response.content
    assert response.json()["detail"].startswith(message), response.json()
    assert response["Retry-After"] == "30"
    assert elapsed < WITHIN_S, f"answered after {elapsed:.1f} s"


# --- the API ---------------------------------------------------------------------------------------------------


def test_an_import_of_a_server_file_answers_503_and_its_job_fails_with_the_reason(api, dead_broker, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "medic.tsv"
    path.write_text(MEDIC)

    response, elapsed = timed_post(api, "/api/imports/", {"kind": "dictionary", "path": str(path), "slug": "medic"},
                                   format="json")

    assert_503(response, elapsed)
    job = ImportJob.objects.get()
    assert job.state == ImportJob.State.FAILED and job.finished_at is not None
    assert job.message == response.json()["detail"]
    assert path.read_text() == MEDIC  # the admin's own file is never removed


def test_a_dictionary_upload_answers_503_and_leaves_no_file(api, dead_broker, _artifacts: Path) -> None:  # type: ignore[no-untyped-def]
    response, elapsed = timed_post(api, "/api/dictionaries/upload/",
                                   {"file": SimpleUploadedFile("medic.tsv", MEDIC.encode()), "slug": "medic"},
                                   format="multipart")

    assert_503(response, elapsed)
    job = ImportJob.objects.get()
    assert (job.state, job.message) == (ImportJob.State.FAILED, response.json()["detail"])
    assert not Path(job.path).exists()
    assert uploads_left(_artifacts) == []


def test_a_training_run_answers_503_and_ends_failed_not_queued(api, mini, dead_broker) -> None:  # type: ignore[no-untyped-def]
    response, elapsed = timed_post(api, "/api/training-runs/", {"dictionary": "mini", "collections": ["gold"]},
                                   format="json")

    assert_503(response, elapsed)
    run = TrainingRun.objects.get()
    assert (run.state, run.error, run.task_id) == (TrainingRun.State.FAILED, response.json()["detail"], "")
    assert run.finished_at is not None and DOWN in run.log_tail


def test_a_large_word_vector_upload_answers_503_and_leaves_no_file(api, dead_broker, _artifacts: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(word_vector_service, "SYNC_LIMIT_BYTES", 10)  # read by a worker: queued
    response, elapsed = timed_post(api, "/api/word-vectors/",
                                   {"file": SimpleUploadedFile("big.vec", b"1 2\nasthma 0.1 0.2\n")}, format="multipart")

    assert_503(response, elapsed)
    job = WordVectorUpload.objects.get()
    assert (job.state, job.error) == (WordVectorUpload.State.FAILED, response.json()["detail"])
    assert uploads_left(_artifacts) == []


def test_an_index_build_answers_503_and_the_version_fails(api, mini, dead_broker) -> None:  # type: ignore[no-untyped-def]
    response, elapsed = timed_post(api, "/api/index-versions/", {"dictionary": "mini"}, format="json")

    assert_503(response, elapsed)
    index = IndexVersion.objects.get()
    assert (index.state, index.error) == (IndexVersion.State.FAILED, response.json()["detail"])


def test_a_broker_that_never_answers_is_given_up_on_as_quickly(api, silent_broker, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "medic.tsv"
    path.write_text(MEDIC)

    response, elapsed = timed_post(api, "/api/imports/", {"kind": "dictionary", "path": str(path), "slug": "medic"},
                                   format="json")

    assert_503(response, elapsed, f"the task queue (Redis at {silent_broker}) is not reachable; nothing was queued")
    assert ImportJob.objects.get().state == ImportJob.State.FAILED


# --- the pages -------------------------------------------------------------------------------------------------


def test_the_start_run_page_answers_503_with_the_reason(alice_client, mini, dead_broker) -> None:  # type: ignore[no-untyped-def]
    form = {"dictionary": "mini", "collections": ["gold"], "epochs": 2, "topk": 20, "dense_ratio": 0.5, "lr": 1e-5,
            "batch_size": 16, "max_length": 25, "train_scope": "auto", "max_queries": 0}

    response, elapsed = timed_post(alice_client, "/training/runs/new/", form)

    assert response.status_code == 503 and elapsed < WITHIN_S
    assert DOWN in response.content.decode()
    assert TrainingRun.objects.get().state == TrainingRun.State.FAILED


def test_the_models_page_answers_503_for_an_index_build_and_a_large_upload(  # type: ignore[no-untyped-def]
    alice_client, mini, dead_broker, _artifacts: Path, monkeypatch
) -> None:
    build, elapsed = timed_post(alice_client, "/training/indexes/build/", {"dictionary": "mini"})
    assert build.status_code == 503 and elapsed < WITHIN_S
    assert DOWN in build.content.decode()
    assert IndexVersion.objects.get().state == IndexVersion.State.FAILED

    monkeypatch.setattr(word_vector_service, "SYNC_LIMIT_BYTES", 10)
    upload, elapsed = timed_post(alice_client, "/training/models/word-vectors/upload/",
                                 {"file": SimpleUploadedFile("big.vec", b"1 2\nasthma 0.1 0.2\n")})
    assert upload.status_code == 503 and elapsed < WITHIN_S
    assert DOWN in upload.content.decode()
    assert WordVectorUpload.objects.get().state == WordVectorUpload.State.FAILED
    assert uploads_left(_artifacts) == []


# --- best-effort work ------------------------------------------------------------------------------------------


def test_work_that_is_not_a_job_is_logged_not_raised(dead_broker, caplog) -> None:  # type: ignore[no-untyped-def]
    """A re-linking after a promotion has no row to fail: the promotion stands, the error is logged."""
    from webapp.core.queue import enqueue

    enqueue("tasks.curation.suggest_links_task", 1)

    assert any(DOWN in r.getMessage() for r in caplog.records)
