"""Uploaded files are removed once their job has ended: an imported dictionary upload, a refused one, an import
that failed for good; kept while a retry may still read them or another unfinished job names them; removed at once
when the request that stored one fails before its job is queued. A file of the server's own is never removed.

The worker reads the uploads under the project's artifact folder (its ARTIFACT_ROOT, as the web side's here).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from celery import states
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import OperationalError
from rest_framework.test import APIClient

from webapp.core.uploads import new_upload_folder, upload_folder
from webapp.imports.jobs import import_ended
from webapp.imports.models import ImportJob
from webapp.jobs.lease import JobLease

pytestmark = pytest.mark.django_db(transaction=True)

TINY_MEDIC = "Asthma\tMESH:D001249\t\tA bronchial disorder.\t\t\t\tBronchial asthma\t\n"


@pytest.fixture
def api(alice) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient(raise_request_exception=False)
    client.force_authenticate(alice)
    return client


@pytest.fixture
def made_uploads(settings) -> Iterator[None]:  # type: ignore[no-untyped-def]
    """The upload folders a test makes under the project's artifact folder are removed afterwards, whatever happened."""
    root = Path(settings.ARTIFACT_ROOT) / "uploads"
    before = set(root.iterdir()) if root.is_dir() else set()
    yield
    for folder in (set(root.iterdir()) if root.is_dir() else set()) - before:
        shutil.rmtree(folder, ignore_errors=True)


def stored(content: str = TINY_MEDIC, name: str = "medic.tsv") -> Path:
    path = new_upload_folder() / name
    path.write_text(content)
    return path


def wait(job_id: int, timeout: float = 60.0) -> ImportJob:
    deadline = time.monotonic() + timeout
    while (job := ImportJob.objects.get(pk=job_id)).is_active:
        assert time.monotonic() < deadline, f"import {job_id} still {job.state}"
        time.sleep(0.2)
    return job


def upload(api: APIClient, content: str, slug: str):  # type: ignore[no-untyped-def]
    response = api.post("/api/dictionaries/upload/", {"file": SimpleUploadedFile("medic.tsv", content.encode()), "slug": slug},
                        format="multipart")
    assert response.status_code == 202, response.content
    return ImportJob.objects.get(pk=response.json()["id"])


# --- on a worker ---------------------------------------------------------------------------------------------------


@pytest.mark.worker
def test_an_imported_upload_and_a_refused_one_are_removed_when_their_job_ends(  # type: ignore[no-untyped-def]
    celery_worker_process, settings, api, made_uploads
) -> None:
    settings.TASK_QUEUE_OVERRIDE = celery_worker_process.queue

    imported = upload(api, TINY_MEDIC, "tiny")
    refused = upload(api, TINY_MEDIC + "Truncated\tMESH:D0\n", "broken")
    assert upload_folder(imported.path) is not None and upload_folder(refused.path) is not None

    imported, refused = wait(imported.pk), wait(refused.pk)
    assert imported.state == ImportJob.State.SUCCEEDED, imported.message
    assert refused.state == ImportJob.State.FAILED and ":2:" in refused.message
    deadline = time.monotonic() + 10  # removed just after the task returns
    while Path(imported.path).parent.exists() or Path(refused.path).parent.exists():
        assert time.monotonic() < deadline, "the uploads were kept after their jobs ended"
        time.sleep(0.1)


@pytest.mark.worker
def test_a_file_of_the_server_is_never_removed(celery_worker_process, settings, api, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings.TASK_QUEUE_OVERRIDE = celery_worker_process.queue
    path = tmp_path / "medic.tsv"
    path.write_text(TINY_MEDIC)

    response = api.post("/api/imports/", {"kind": "dictionary", "path": str(path), "slug": "own"}, format="json")

    assert wait(response.json()["id"]).state == ImportJob.State.SUCCEEDED
    assert path.read_text() == TINY_MEDIC


# --- when the task ends ----------------------------------------------------------------------------------------------


def test_a_try_that_will_be_retried_keeps_the_file_and_the_last_failure_removes_it(made_uploads) -> None:  # type: ignore[no-untyped-def]
    from tasks.imports import run_import
    from tasks.jobs import _import_ended

    path = stored()
    job = ImportJob.objects.create(import_kind="dictionary", path=str(path), params={}, state=ImportJob.State.RUNNING)
    outage = OperationalError("the database system is shutting down")

    with JobLease(job.pk):  # the try's worker runs it (a test worker's sweep fails a job without a lease)
        _import_ended(task=run_import, args=(job.pk,), retval=outage, state=states.RETRY)
        assert path.exists()
        _import_ended(task=run_import, args=(job.pk,), retval=outage, state=states.FAILURE)  # retries exhausted
    job.refresh_from_db()
    assert (job.state, job.message) == (ImportJob.State.FAILED, "the import stopped: OperationalError: the database "
                                                                "system is shutting down")
    assert job.finished_at is not None
    assert not path.parent.exists()


def test_a_file_another_unfinished_import_names_is_kept(made_uploads) -> None:  # type: ignore[no-untyped-def]
    path = stored()
    done = ImportJob.objects.create(import_kind="dictionary", path=str(path), params={}, state=ImportJob.State.SUCCEEDED)
    again = ImportJob.objects.create(import_kind="dictionary", path=str(path), params={})

    assert import_ended(done.pk) is False and path.exists()
    assert import_ended(again.pk) is False  # not ended yet

    ImportJob.objects.filter(pk=again.pk).update(state=ImportJob.State.FAILED)
    assert import_ended(done.pk) is True and not path.parent.exists()


# --- in the request ------------------------------------------------------------------------------------------------


def test_a_request_that_fails_before_queueing_leaves_no_file(api, settings, monkeypatch, made_uploads) -> None:  # type: ignore[no-untyped-def]
    from webapp.api.views import imports

    def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("the job could not be written")

    monkeypatch.setattr(imports, "queue_import", broken)
    root = Path(settings.ARTIFACT_ROOT) / "uploads"
    before = set(root.iterdir()) if root.is_dir() else set()

    response = api.post("/api/dictionaries/upload/", {"file": SimpleUploadedFile("medic.tsv", TINY_MEDIC.encode()),
                                                       "slug": "x"}, format="multipart")

    assert response.status_code == 500
    assert set(root.iterdir()) - before == set()
    assert not ImportJob.objects.exists()
