"""The API says where detection stands: documents expose their detection state and error, mentions their source,
detector and its version; a document posted without mentions is queued for detection, one with mentions is not."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from tests.integration.detection_helpers import TEXT, mini_dictionary, mini_index, notes
from webapp.corpus.models import Document
from webapp.curation.services.detection import detect_documents
from webapp.linking.registry import forget_all

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice_api(alice) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(alice)
    return client


def test_a_posted_document_without_mentions_is_queued_and_then_shows_the_detectors_mentions(alice_api: APIClient, tmp_path: Path) -> None:
    forget_all()
    version = mini_dictionary()
    index = mini_index(tmp_path, version)
    notes(version.dictionary)

    created = alice_api.post("/api/documents/", {"collection": "notes", "external_id": "n1", "text": TEXT}, format="json")
    assert created.status_code == 201, created.json()
    assert (created.json()["detection_state"], created.json()["detection_error"], created.json()["mentions"]) == ("queued", "", [])
    gold = alice_api.post("/api/documents/", {"collection": "notes", "external_id": "n2", "text": TEXT,
                                              "mentions": [{"start": 0, "end": 9}]}, format="json")
    assert gold.json()["detection_state"] == "none"

    detect_documents([created.json()["id"]])

    detail = alice_api.get(f"/api/documents/{created.json()['id']}/").json()
    assert (detail["detection_state"], detail["detection_model"]) == ("done", f"matcher:{index.label}")
    assert [(m["text"], m["source"], m["detector"], m["model_version"]) for m in detail["mentions"]] == [
        ("Bronchial asthma", "detector", "matcher", index.label), ("high blood pressure", "detector", "matcher", index.label)]
    listed = alice_api.get("/api/documents/", {"collection": "notes"}).json()["results"]
    assert {(d["external_id"], d["detection_state"]) for d in listed} == {("n1", "done"), ("n2", "none")}


def test_a_plain_text_upload_and_a_collection_with_detection_off(alice_api: APIClient) -> None:
    created = alice_api.post("/api/collections/", {"slug": "by-hand", "title": "By hand", "detection": "off"}, format="json")
    assert created.json()["detection"] == "off"
    response = alice_api.post("/api/collections/by-hand/upload/",
                              {"file": SimpleUploadedFile("note.txt", b"Asthma at night."), "format": "text"}, format="multipart")
    assert response.status_code == 201, response.json()
    assert Document.objects.get().detection_state == "none"  # detection is off: curators add mentions by hand
    bad = alice_api.post("/api/collections/by-hand/upload/",
                         {"file": SimpleUploadedFile("scan.txt", b"%PDF\x00"), "format": "text"}, format="multipart")
    assert bad.status_code == 400
    assert bad.json()["detail"] == "scan.txt: line 1: a NUL byte at byte 4: a binary file, not plain text (extract the text of a PDF first)"
