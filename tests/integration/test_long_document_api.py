"""The API's memory per request is bounded by construction on a long document: a page of mentions reads no document
text (it read the whole text once per mention row, and 500 mentions of a 9.5M-character document grew a worker by
9 GB), a list of documents reads none, and a document's detail lists its first mentions and points to the rest."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from tests.integration.long_document import SENTENCE, long_document
from webapp.api.serializers import DOCUMENT_MENTIONS_SHOWN
from webapp.corpus.models import Document

pytestmark = pytest.mark.django_db

TEXT_COLUMN = '"corpus_document"."text"'


@pytest.fixture
def bob_api(bob) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(bob)
    return client


@pytest.fixture
def document(db) -> Document:  # type: ignore[no-untyped-def]
    return long_document(sentences=3_000)  # 195,000 characters, 3,000 mentions


def test_a_page_of_mentions_never_reads_the_document_text(bob_api: APIClient, document: Document) -> None:
    with CaptureQueriesContext(connection) as queries:
        response = bob_api.get("/api/mentions/", {"document": document.pk, "page_size": 500})
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 3_000 and len(body["results"]) == 500
    first = body["results"][0]
    assert (first["document"], first["document_external_id"], first["collection"], first["text"]) == (
        document.pk,
        "long-1",
        "long",
        "asthma",
    )
    assert not [q["sql"] for q in queries.captured_queries if TEXT_COLUMN in q["sql"]]
    # 500 short mentions: a few hundred bytes each, whatever the document's length.
    assert len(response.content) < 500 * 1_000


def test_a_list_of_documents_reads_no_text(bob_api: APIClient, document: Document) -> None:
    with CaptureQueriesContext(connection) as queries:
        response = bob_api.get("/api/documents/", {"collection": "long"})
    assert response.status_code == 200 and response.json()["results"][0]["mention_count"] == 3_000
    assert not [q["sql"] for q in queries.captured_queries if TEXT_COLUMN in q["sql"]]
    assert len(response.content) < 10_000


def test_a_documents_detail_lists_its_first_mentions_and_points_to_the_rest(
    bob_api: APIClient, document: Document
) -> None:
    body = bob_api.get(f"/api/documents/{document.pk}/").json()
    assert body["mention_count"] == 3_000 and len(body["mentions"]) == DOCUMENT_MENTIONS_SHOWN
    assert body["mentions_complete"] is False
    assert body["mentions_url"] == f"/api/mentions/?document={document.pk}"
    assert [m["start"] for m in body["mentions"][:2]] == [
        SENTENCE.index("asthma"),
        len(SENTENCE) + SENTENCE.index("asthma"),
    ]
    assert bob_api.get(body["mentions_url"]).json()["count"] == 3_000


def test_a_short_documents_detail_lists_every_mention(bob_api: APIClient) -> None:
    short = long_document(sentences=3, slug="short")
    body = bob_api.get(f"/api/documents/{short.pk}/").json()
    assert len(body["mentions"]) == body["mention_count"] == 3 and body["mentions_complete"] is True
