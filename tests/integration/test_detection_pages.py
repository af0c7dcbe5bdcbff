"""The curation page while mentions are detected: a polled banner, then the mentions without a reload (286 with
the text out of band); a failure shown with its reason, and "Detect again" for admins only."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.detection_helpers import TEXT, mini_dictionary, mini_index, notes
from webapp.corpus.formats import DocumentRecord
from webapp.corpus.formats.services import import_records
from webapp.corpus.models import Document
from webapp.curation.services.detection import detect_documents
from webapp.linking.registry import forget_all

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued(tmp_path: Path) -> Document:
    forget_all()
    version = mini_dictionary()
    mini_index(tmp_path, version)
    collection = notes(version.dictionary)
    import_records([DocumentRecord("note-1", TEXT)], source="test", collection_slug=collection.slug)
    return Document.objects.get()


def test_a_queued_document_shows_a_polled_banner_then_its_mentions(bob_client, queued: Document) -> None:  # type: ignore[no-untyped-def]
    page = bob_client.get(f"/curate/notes/documents/{queued.pk}/").content.decode()
    assert "Detecting mentions…" in page and f'hx-get="/curate/documents/{queued.pk}/detection/"' in page

    poll = bob_client.get(f"/curate/documents/{queued.pk}/detection/")
    assert poll.status_code == 200 and "Detecting mentions…" in poll.content.decode()

    detect_documents([queued.pk])
    last = bob_client.get(f"/curate/documents/{queued.pk}/detection/")
    body = last.content.decode()
    assert last.status_code == 286  # htmx stops polling
    assert 'id="document-text"' in body and 'hx-swap-oob="true"' in body
    assert body.count('class="mention status-suggested by-detector"') == 2
    assert "found by the dictionary matcher" in body  # the mention's tooltip
    assert "curation:detected" in last["HX-Trigger-After-Swap"]
    assert "Detect again" not in body  # a curator is no admin

    mention = queued.mentions.first()
    panel = bob_client.get(f"/curate/mentions/{mention.pk}/panel/").content.decode()
    assert "Found by the dictionary matcher (" in panel


def test_a_failure_is_shown_with_its_reason_and_admins_can_detect_again(alice_client, queued: Document) -> None:  # type: ignore[no-untyped-def]
    Document.objects.filter(pk=queued.pk).update(detection_state="failed", detection_error="no active index for dictionary mini: build one on the Models page")
    page = alice_client.get(f"/curate/notes/documents/{queued.pk}/").content.decode()
    assert "Mention detection failed:" in page and "build one on the Models page." in page
    assert "Detect again" in page

    response = alice_client.post(f"/curate/documents/{queued.pk}/detect/")
    assert response.status_code == 302
    assert Document.objects.get(pk=queued.pk).detection_state == "queued"
    again = alice_client.post(f"/curate/documents/{queued.pk}/detect/", follow=True)
    assert "Not queued: mentions are being detected in this document already." in again.content.decode()


def test_curators_cannot_queue_detection(bob_client, queued: Document) -> None:  # type: ignore[no-untyped-def]
    Document.objects.filter(pk=queued.pk).update(detection_state="failed")
    assert bob_client.post(f"/curate/documents/{queued.pk}/detect/").status_code == 403
    assert Document.objects.get(pk=queued.pk).detection_state == "failed"
