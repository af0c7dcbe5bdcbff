"""The Imports page follows the job an admin has just queued to its outcome: the line above the table says
"queued as import #N", then (the table polls) "Import #N succeeded: ..." or "... failed: ...", never "queued" once
the job has ended. A succeeded import's warnings (a PMID repeated in a PubTator file, kept as ``ID#2``, as the
README promises) show in its row, and the API gives them as ``warnings``."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from pytest_django.asserts import assertContains, assertNotContains
from rest_framework.test import APIClient

from tasks.imports import run_import
from webapp.corpus.models import Document
from webapp.imports.models import ImportJob

pytestmark = pytest.mark.django_db

# NCBI Disease's train file holds PMID 8528200 twice; this one does too (lines 1-3 and 8-10).
REPEATED = (
    "8528200|t|Asthma in children.\n8528200|a|Asthma is common.\n8528200\t0\t6\tAsthma\tDisease\tD001249\n\n"
    "7|t|Gout.\n7|a|Gout hurts.\n\n"
    "8528200|t|Asthma in adults.\n8528200|a|It is common.\n8528200\t0\t6\tAsthma\tDisease\tD001249\n\n"
)
REPEAT_WARNING = "train.txt:8: PMID 8528200 appears again in the file (copy 2); stored as its own document 8528200#2"
POLL = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "import-jobs"}  # the table's own request every 2 s


@pytest.fixture(autouse=True)
def artifacts(settings, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    return Path(settings.ARTIFACT_ROOT)


@pytest.fixture
def alice_client(alice) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(alice)
    return client


def upload(client: Client, name: str, text: str, django_capture_on_commit_callbacks) -> tuple[ImportJob, str]:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=False):  # the worker's part is run by the test
        response = client.post("/imports/documents/", {"file": SimpleUploadedFile(name, text.encode()), "new_slug": "ncbi"})
    assert response.status_code == 302, response.content
    return ImportJob.objects.get(), response["Location"]


def test_the_queued_line_gives_way_to_the_outcome_once_the_job_succeeded(  # type: ignore[no-untyped-def]
    alice_client: Client, django_capture_on_commit_callbacks
) -> None:
    job, location = upload(alice_client, "train.txt", REPEATED, django_capture_on_commit_callbacks)
    queued = f"train.txt is queued as import #{job.pk} into collection ncbi"
    assertContains(alice_client.get(location), queued)

    assert run_import(job.pk) == ImportJob.State.SUCCEEDED
    for page in (alice_client.get(location, **POLL), alice_client.get(location)):  # the poll, and a reload
        assertNotContains(page, "is queued as", status_code=page.status_code)
        assertContains(page, f'<p id="import-notice" class="message message-warning" role="status" data-state="succeeded">'
                             f"Import #{job.pk} succeeded: imported 3 documents", status_code=page.status_code)
        assertContains(page, "(1 warning, shown in its row).", status_code=page.status_code)
    assert alice_client.get(location, **POLL).status_code == 286  # nothing left to poll for: htmx stops


def test_a_failed_job_replaces_the_queued_line_with_its_reason(  # type: ignore[no-untyped-def]
    alice_client: Client, django_capture_on_commit_callbacks
) -> None:
    job, location = upload(alice_client, "bad.txt", REPEATED.replace("\t0\t6\t", "\t0\t99\t", 1),
                           django_capture_on_commit_callbacks)
    assert run_import(job.pk) == ImportJob.State.FAILED
    page = alice_client.get(location, **POLL)
    assertNotContains(page, "is queued as", status_code=286)
    assertContains(page, f'role="alert" data-state="failed">Import #{job.pk} failed: bad.txt:3: span 0-99 outside',
                   status_code=286)


def test_a_repeated_pmid_is_kept_with_a_warning_shown_in_its_row_and_the_api(  # type: ignore[no-untyped-def]
    alice, alice_client: Client, django_capture_on_commit_callbacks
) -> None:
    job, _ = upload(alice_client, "train.txt", REPEATED, django_capture_on_commit_callbacks)
    assert run_import(job.pk) == ImportJob.State.SUCCEEDED
    assert sorted(Document.objects.values_list("external_id", flat=True)) == ["7", "8528200", "8528200#2"]

    row = alice_client.get("/imports/").content.decode().split(f'id="import-job-{job.pk}"', 1)[1].split("</tr>", 1)[0]
    assert '<span class="badge badge-warn">1 warning</span>' in row
    assert f"<li>{REPEAT_WARNING}</li>" in row, row[row.find("<details"):row.find("</details>")]

    api = APIClient()
    api.force_authenticate(alice)
    assert api.get(f"/api/imports/{job.pk}/").json()["warnings"] == [REPEAT_WARNING]
