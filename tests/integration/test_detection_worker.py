"""On a real Celery worker: a plain-text file uploaded through the API has its mentions detected and linked, with
the detector's provenance and the model's suggestions; a 5 MB text imported through the queued path leaves the
web request fast, the worker importing it and detecting its mentions."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from tests.integration.detection_helpers import detection_worker, mini_dictionary, mini_index, notes, wait_for  # noqa: F401
from webapp.corpus.models import Document
from webapp.imports.models import ImportJob
from webapp.linking.registry import forget_all

pytestmark = [pytest.mark.worker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def alice_api(alice) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(alice)
    return client


@pytest.fixture
def world(detection_worker, settings, tmp_path: Path):  # type: ignore[no-untyped-def]  # noqa: F811
    forget_all()
    settings.TASK_QUEUE_OVERRIDE = detection_worker.queue
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    version = mini_dictionary()
    index = mini_index(tmp_path, version)
    notes(version.dictionary)
    return index


def _state(document_id: int) -> str:
    return Document.objects.get(pk=document_id).detection_state


def test_an_uploaded_text_file_is_detected_and_linked_by_the_worker(alice_api: APIClient, world) -> None:  # type: ignore[no-untyped-def]
    text = "Asthma in winter\r\n\r\nBronchial asthma and high blood pressure were seen, with dia-\r\nbetes.\n"
    response = alice_api.post("/api/collections/notes/upload/", {"file": SimpleUploadedFile("case-7.txt", text.encode()),
                                                                 "format": "text"}, format="multipart")
    assert response.status_code == 201, response.json()
    document = Document.objects.get(external_id="case-7")
    assert document.text.endswith("with diabetes.\n")  # the PDF line break is mended before anything counts offsets

    wait_for(lambda: _state(document.pk) in ("done", "failed"), what="detection on the worker")

    detail = alice_api.get(f"/api/documents/{document.pk}/").json()
    assert (detail["detection_state"], detail["detection_error"]) == ("done", ""), detail["detection_error"]
    label = world.label
    found = [(m["text"], m["source"], m["detector"], m["model_version"], m["status"]) for m in detail["mentions"]]
    assert found == [
        ("Asthma", "detector", "matcher", label, "suggested"),
        ("Bronchial asthma", "detector", "matcher", label, "suggested"),
        ("high blood pressure", "detector", "matcher", label, "suggested"),
        ("diabetes", "detector", "matcher", label, "suggested"),
    ]
    top = {m["text"]: next(link for link in m["links"] if link["origin"] == "model" and link["rank"] == 1) for m in detail["mentions"]}
    assert {text: link["concept_ref"] for text, link in top.items()} == {
        "Asthma": "MESH:D001249", "Bronchial asthma": "MESH:D001249", "high blood pressure": "MESH:D006973", "diabetes": "MESH:D003920"}
    assert {link["model_version"] for link in top.values()} == {label}


def test_a_five_megabyte_text_imported_on_the_queue_leaves_the_request_fast(alice_api: APIClient, world, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    filler = "The cohort was followed for several years without further events in the clinic. "
    chunk = filler * 40 + "One patient had bronchial asthma.\n"
    text = chunk * (5_000_000 // len(chunk) + 1)
    path = tmp_path / "big-note.txt"
    path.write_text(text)
    assert path.stat().st_size > 5_000_000

    started = time.monotonic()
    response = alice_api.post("/api/imports/", {"kind": "documents", "path": str(path), "slug": "notes", "format": "text"}, format="json")
    elapsed = time.monotonic() - started
    assert response.status_code == 202, response.json()
    assert elapsed < 2.0, f"the request took {elapsed:.1f} s"  # queued, not imported, by the web process

    job = response.json()["id"]
    wait_for(lambda: ImportJob.objects.get(pk=job).state in ("succeeded", "failed"), timeout=180, what="the import job")
    assert ImportJob.objects.get(pk=job).state == "succeeded", ImportJob.objects.get(pk=job).message
    document = Document.objects.only("pk").get(external_id="big-note")
    wait_for(lambda: _state(document.pk) in ("done", "failed"), timeout=300, every=1.0, what="detection of 5 MB")
    assert _state(document.pk) == "done", Document.objects.get(pk=document.pk).detection_error
    assert document.mentions.count() == text.count("bronchial asthma")
    assert not document.mentions.exclude(source="detector").exists()
