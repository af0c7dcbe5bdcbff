"""Odd but well-formed requests to the bulk export (found by schemathesis): a date far in the past with an unusual
UTC offset, a detection state that is not one, a collection without documents; each is an answer, never a 500."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from webapp.corpus.models import Collection, Document

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(alice) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(alice)
    return client


@pytest.mark.parametrize("url", [
    "/api/collections/DAN/documents/stream/?as=pubtator&changed_since=0439-11-29T02%3A09%3A23%2B17%3A53",
    "/api/collections/DAN/documents/stream/?detection_state=%C2%BB%C3%AE%C2%A0%27",
    "/api/collections/DAN/documents/?changed_since=0439-11-29T02%3A09%3A23%2B17%3A53",
    "/api/collections/DAN/export/",
    "/api/collections/DAN/export/?as=bioc-xml",
    "/api/documents/?changed_since=0001-01-01T00%3A00%3A00%2B01%3A00",
    "/api/documents/?changed_since=9999-12-31T23%3A59%3A59-12%3A00",
])
def test_odd_requests_are_answered_not_failed(api: APIClient, url: str) -> None:
    collection = Collection.objects.create(slug="DAN", title="DAN")
    Document.objects.create(collection=collection, external_id="d1", text="Asthma.")
    answer = api.get(url)
    body = b"".join(answer.streaming_content) if answer.streaming else answer.content
    assert answer.status_code in (200, 400), (answer.status_code, body[:500])
