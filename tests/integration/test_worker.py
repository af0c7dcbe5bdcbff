"""A real Celery worker, over the real broker, runs an import and writes it to the database."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from webapp.imports.models import ImportJob

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

TINY_MEDIC = (
    "# Report created: worker test\n"
    "Diseases\tMESH:C\t\t\t\t\t\t\t\n"
    "Asthma\tMESH:D001249\t\tA bronchial disorder.\tMESH:C\t\t\tBronchial asthma\tRespiratory tract disease\n"
)


def _wait(job_id: int, timeout: float = 60.0) -> ImportJob:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = ImportJob.objects.get(pk=job_id)
        if job.state in (ImportJob.State.SUCCEEDED, ImportJob.State.FAILED):
            return job
        time.sleep(0.2)
    raise AssertionError(f"import job {job_id} still {ImportJob.objects.get(pk=job_id).state} after {timeout} s")


def test_worker_runs_an_import_and_writes_to_the_database(celery_worker_process, tmp_path: Path) -> None:
    from tasks.imports import run_import
    from webapp.vocab.models import Concept

    path = tmp_path / "tiny.tsv"
    path.write_text(TINY_MEDIC)
    job = ImportJob.objects.create(import_kind="dictionary", path=str(path), params={"dictionary_slug": "tiny"})
    run_import.apply_async((job.pk,), queue=celery_worker_process.queue)

    job = _wait(job.pk)
    assert job.state == ImportJob.State.SUCCEEDED, job.message
    assert job.worker
    assert sorted(Concept.objects.filter(version__dictionary__slug="tiny").values_list("concept_id", flat=True)) == [
        "MESH:C",
        "MESH:D001249",
    ]


def test_worker_reports_a_malformed_file_with_its_line(celery_worker_process, tmp_path: Path) -> None:
    from tasks.imports import run_import
    from webapp.vocab.models import Concept

    path = tmp_path / "broken.tsv"
    path.write_text(TINY_MEDIC + "Truncated\tMESH:D0\n")
    job = ImportJob.objects.create(import_kind="dictionary", path=str(path), params={"dictionary_slug": "broken", "fmt": "medic"})
    run_import.apply_async((job.pk,), queue=celery_worker_process.queue)

    job = _wait(job.pk)
    assert job.state == ImportJob.State.FAILED
    assert job.message.startswith("broken.tsv:4:") and str(path.parent) not in job.message  # no server path
    assert not Concept.objects.filter(version__dictionary__slug="broken").exists()


def test_api_queues_a_bioc_import_by_task_name_and_the_worker_runs_it(  # type: ignore[no-untyped-def]
    celery_worker_process, settings, alice, tmp_path: Path
) -> None:
    """POST /api/imports/ with a format: the web side names the task, the worker imports the BioC file."""
    from rest_framework.test import APIClient

    from webapp.corpus.models import Document

    settings.TASK_QUEUE_OVERRIDE = celery_worker_process.queue
    path = tmp_path / "docs.xml"
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?><collection><source>t</source><date>2026</date><key>k</key>'
        '<document><id>42</id><passage><offset>0</offset><text>Asthma in children.</text></passage></document>'
        "</collection>"
    )
    client = APIClient()
    client.force_authenticate(alice)
    response = client.post("/api/imports/", {"kind": "documents", "path": str(path), "slug": "kids", "format": "bioc-xml"},
                           format="json")
    assert response.status_code == 202, response.json()
    assert response.json()["params"]["format"] == "bioc-xml" and "progress_total" in response.json()
    job = _wait(response.json()["id"])
    assert job.state == ImportJob.State.SUCCEEDED, job.message
    assert list(Document.objects.filter(collection__slug="kids").values_list("external_id", flat=True)) == ["42"]
