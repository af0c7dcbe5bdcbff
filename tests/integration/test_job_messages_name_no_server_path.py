"""A job's message names the file at fault by its name, never by a folder of the server: a failed dictionary
upload says ``medic.tsv:3: ...`` (not ``.../var/artifacts/uploads/<hex>/medic.tsv:3: ...``) on the Imports page
and in the API, as the collection upload always did; the same rule holds for every job's message or error
(index builds, training runs, evaluations, carry-overs, detection), however it is written."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.apps import apps
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils.html import escape
from rest_framework.test import APIClient

from tasks.imports import run_import
from tests.integration.test_import_dictionary import medic_text
from webapp.core.public import PublicMessageField, public_message
from webapp.imports.models import ImportJob
from webapp.linking.models import IndexVersion
from webapp.vocab.models import Dictionary, DictionaryVersion

pytestmark = pytest.mark.django_db

BAD_MEDIC = medic_text().replace("MESH:D003924", "MESH D003924", 1)  # a DiseaseID that is not MESH:...


@pytest.fixture
def artifacts(settings, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    settings.ARTIFACT_ROOT = tmp_path / "var" / "artifacts"
    return Path(settings.ARTIFACT_ROOT)


@pytest.fixture
def alice_api(alice) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(alice)
    return client


def assert_names_no_folder(text: str, artifacts: Path) -> None:
    for leak in (str(artifacts), "artifacts", "uploads/", "/tmp", "/work"):
        assert leak not in text, text


def test_a_failed_dictionary_upload_names_its_file_in_the_api_and_on_the_imports_page(  # type: ignore[no-untyped-def]
    alice_api: APIClient, alice, artifacts: Path, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=False):  # the worker's part is run below, in this process
        response = alice_api.post("/api/dictionaries/upload/", {"file": SimpleUploadedFile("medic.tsv", BAD_MEDIC.encode()),
                                                                "slug": "medic"}, format="multipart")
    assert response.status_code == 202, response.content
    job = ImportJob.objects.get()
    assert Path(job.path).is_relative_to(artifacts / "uploads")
    assert response.json()["path"] == "medic.tsv"

    assert run_import(job.pk) == ImportJob.State.FAILED
    job.refresh_from_db()
    assert job.message.startswith("medic.tsv:"), job.message
    assert "DiseaseID 'MESH D003924'" in job.message
    assert_names_no_folder(job.message, artifacts)

    shown = alice_api.get(f"/api/imports/{job.pk}/").json()
    assert (shown["path"], shown["message"]) == ("medic.tsv", job.message)
    client = Client()
    client.force_login(alice)
    page = client.get("/imports/").content.decode()
    assert escape(job.message) in page
    assert_names_no_folder(page.split('id="import-jobs"', 1)[1], artifacts)


def test_a_message_stored_before_the_rule_is_shown_by_the_file_name(alice_api: APIClient, artifacts: Path) -> None:
    upload = artifacts / "uploads" / ("b" * 32) / "ctd.tsv"
    job = ImportJob.objects.create(import_kind="dictionary", path=str(upload), state=ImportJob.State.FAILED,
                                   params={"dictionary_slug": "ctd"})
    ImportJob.objects.filter(pk=job.pk).update(error=f"{upload}:4: DiseaseID appears twice")  # already stored so
    assert ImportJob.objects.get().message == "ctd.tsv:4: DiseaseID appears twice"
    assert alice_api.get(f"/api/imports/{job.pk}/").json()["message"] == "ctd.tsv:4: DiseaseID appears twice"


def test_an_index_error_written_by_update_or_save_loses_the_artifact_folder(artifacts: Path) -> None:
    dictionary = Dictionary.objects.create(slug="d", title="D")
    version = DictionaryVersion.objects.create(dictionary=dictionary, release="1", source_format="medic", checksum="c" * 64)
    index = IndexVersion.objects.create(dictionary=dictionary, dictionary_version=version)
    missing = artifacts / "indexes" / str(index.pk) / "index.faiss"
    IndexVersion.objects.filter(pk=index.pk).update(error=f"FileNotFoundError: [Errno 2] No such file: '{missing}'")
    index.refresh_from_db()
    assert index.error == "FileNotFoundError: [Errno 2] No such file: 'index.faiss'"
    index.error = f"could not write {artifacts}/indexes/{index.pk}"
    index.save(update_fields=["error"])
    assert index.error == IndexVersion.objects.get().error == f"could not write {index.pk}"


def test_every_message_or_error_a_job_stores_goes_through_the_rule() -> None:
    names = {"message", "error", "last_error", "index_message", "detection_error"}
    fields = [f for model in apps.get_models() if model.__module__.startswith("webapp.")
              for f in model._meta.get_fields() if f.name in names and getattr(f, "get_internal_type", None)
              and f.get_internal_type() == "TextField"]
    assert len(fields) >= 8
    assert [f"{f.model.__name__}.{f.name}" for f in fields if not isinstance(f, PublicMessageField)] == []


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("{root}/uploads/0a1b/medic.tsv:5: DiseaseID appears twice", "medic.tsv:5: DiseaseID appears twice"),
        ("{tmp}/upload-x1y2/c.json: document 7: no id", "c.json: document 7: no id"),
        ("cannot write to {root}: disk full", "cannot write to artifacts: disk full"),
        ("/data/corpora/medic.tsv:5: bad", "/data/corpora/medic.tsv:5: bad"),  # a path the admin gave is theirs
        ("/var{tmp}/x.txt: bad", "/var{tmp}/x.txt: bad"),  # not under a folder of ours
        ("no path at all", "no path at all"),
    ],
)
def test_public_message(artifacts: Path, text: str, shown: str) -> None:
    import tempfile

    def fill(s: str) -> str:
        return s.format(root=artifacts, tmp=tempfile.gettempdir())

    assert public_message(fill(text)) == fill(shown)
