"""A real Celery worker, over the real broker, runs an import and writes it to the database."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from webapp.core.models import ImportJob

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
    job = ImportJob.objects.create(kind="dictionary", path=str(path), params={"dictionary_slug": "tiny"})
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
    job = ImportJob.objects.create(kind="dictionary", path=str(path), params={"dictionary_slug": "broken", "fmt": "medic"})
    run_import.apply_async((job.pk,), queue=celery_worker_process.queue)

    job = _wait(job.pk)
    assert job.state == ImportJob.State.FAILED
    assert f"{path}:4:" in job.message
    assert not Concept.objects.filter(version__dictionary__slug="broken").exists()
