"""Bulk export (issue #45): a collection's export streams a batch of documents at a time in one snapshot of the
database; the cursor listing walks every document once; the filters (changed since, model version, detection state,
mention status) and their 400s; ``manage.py export_collection``."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.http import StreamingHttpResponse
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.curation.export import EXPORT_BATCH, stream_documents

# About 1,000 characters a document: a streamed piece (64K characters) holds some 60 documents, a batch 200.
WORDS = "Bronchial asthma and gout in a cohort of adults followed for ten years. " * 14
N = 2 * EXPORT_BATCH + 50  # three batches


def _collection(slug: str = "big", n: int = N) -> Collection:
    collection = Collection.objects.create(slug=slug, title=slug)
    documents = Document.objects.bulk_create(
        Document(collection=collection, external_id=f"d{i:04d}", title="", text=f"Doc {i:04d}. {WORDS}") for i in range(n)
    )
    start = documents[0].text.index("asthma")
    Mention.objects.bulk_create(
        Mention(document=d, start=start, end=start + 6, text="asthma", mention_type="Disease", source=Mention.Source.GOLD)
        for d in documents
    )
    return collection


def _api(user) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(user)
    return client


def _ids(jsonl: bytes) -> list[str]:
    return [json.loads(line)["id"] for line in jsonl.decode().splitlines()]


@pytest.mark.django_db
def test_an_export_sends_its_first_piece_before_it_reads_the_later_batches(bob) -> None:  # type: ignore[no-untyped-def]
    collection = _collection()
    response = _api(bob).get(f"/api/collections/{collection.slug}/export/", {"as": "jsonl"})
    assert isinstance(response, StreamingHttpResponse)
    assert response["Content-Disposition"] == 'attachment; filename="big.jsonl"'
    assert response["Content-Type"] == "application/x-ndjson"

    chunks = stream_documents(Document.objects.filter(collection=collection), "jsonl").chunks
    with CaptureQueriesContext(connection) as queries:
        first = next(chunks)
        read_before = sum('FROM "corpus_document"' in q["sql"] for q in queries.captured_queries)
        rest = b"".join(chunks)
        read_in_all = sum('FROM "corpus_document"' in q["sql"] for q in queries.captured_queries)
    assert 0 < len(_ids(first)) < EXPORT_BATCH
    assert (read_before, read_in_all) == (1, 3)  # one batch read for the first piece; three for the whole
    assert not any("OFFSET" in q["sql"] for q in queries.captured_queries)  # keyset pagination, by pk
    assert _ids(first + rest) == [f"d{i:04d}" for i in range(N)]


@pytest.mark.django_db(transaction=True)
def test_an_export_is_one_snapshot_while_documents_are_written(bob) -> None:  # type: ignore[no-untyped-def]
    collection = _collection("live")
    last = Document.objects.filter(collection=collection).order_by("pk").last()
    assert last is not None
    response = _api(bob).get("/api/collections/live/export/", {"as": "jsonl", "links": "all"})
    chunks = iter(response.streaming_content)
    first = next(chunks)  # the snapshot is taken: the first batch is read
    # Meanwhile (this test's connection, committed at once): a corpus run's new mention on a later document, a new
    # document, and a removed one.
    start = last.text.index("gout")
    Mention.objects.create(document=last, start=start, end=start + 4, text="gout", mention_type="Disease")
    Document.objects.create(collection=collection, external_id="zz-new", text="A new one.")
    Document.objects.filter(collection=collection, external_id="d0440").delete()
    lines = [json.loads(line) for line in (first + b"".join(chunks)).decode().splitlines()]
    response.close()
    assert [d["id"] for d in lines] == [f"d{i:04d}" for i in range(N)]
    assert [m["text"] for m in lines[-1]["mentions"]] == ["asthma"]
    # A new export sees what was committed.
    again = _api(bob).get("/api/collections/live/documents/stream/", {"as": "jsonl"}).getvalue()
    ids = _ids(again)
    assert "zz-new" in ids and "d0440" not in ids
    assert [m["text"] for m in json.loads(again.decode().splitlines()[-2])["mentions"]] == ["asthma", "gout"]


@pytest.mark.django_db(transaction=True)
def test_a_client_that_stops_reading_ends_the_snapshot_and_its_connection(bob) -> None:  # type: ignore[no-untyped-def]
    _collection("cut")
    response = _api(bob).get("/api/collections/cut/documents/stream/", {"as": "bioc-xml"})
    chunks = iter(response.streaming_content)
    assert next(chunks).startswith(b"<?xml")
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
        (during,) = cursor.fetchone()
    response.close()  # what the server does when the client goes away
    after = during
    for _ in range(100):  # the server process ends a moment after its client has closed the connection
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
            (after,) = cursor.fetchone()
        if after < during:
            break
        time.sleep(0.05)
    assert after == during - 1


@pytest.mark.django_db(transaction=True)
def test_the_cursor_walk_meets_every_document_once_while_documents_are_added(bob) -> None:  # type: ignore[no-untyped-def]
    _collection("walk", n=25)
    api = _api(bob)
    seen: list[str] = []
    url: str | None = "/api/collections/walk/documents/?page_size=10"
    added = False
    while url:
        page = api.get(url)
        assert page.status_code == 200, page.json()
        seen += [d["external_id"] for d in page.json()["results"]]
        if not added:
            Document.objects.bulk_create(
                Document(collection_id=Collection.objects.get(slug="walk").pk, external_id=f"new{i}", text="New.") for i in range(5)
            )
            added = True
        url = page.json()["next"]
    assert sorted(seen) == sorted([f"d{i:04d}" for i in range(25)] + [f"new{i}" for i in range(5)])
    assert len(seen) == len(set(seen))


@pytest.mark.django_db
def test_the_filters_changed_since_model_version_detection_and_mention_status(bob) -> None:  # type: ignore[no-untyped-def]
    collection = _collection("f", n=6)
    docs = list(Document.objects.filter(collection=collection).order_by("pk"))
    long_ago = timezone.now() - timedelta(days=30)
    Document.objects.filter(collection=collection).update(changed_at=long_ago)
    # A model's suggestion on d1 (a new link stamps its document), a detector's mention of model m-2 on d2, a
    # rejected span on d3 (an update stamps it), d4 detected.
    on_d1 = docs[1].mentions.get()
    Link.objects.create(mention=on_d1, nil=True, origin=Link.Origin.MODEL, model_version="m-1")
    gout = docs[2].text.index("gout")
    Mention.objects.create(document=docs[2], start=gout, end=gout + 4, text="gout", source=Mention.Source.DETECTOR, model_version="m-2")
    Mention.objects.filter(document=docs[3]).update(status=Mention.Status.REJECTED)
    Document.objects.filter(pk=docs[4].pk).update(detection_state=Document.DetectionState.DONE)
    api = _api(bob)

    def listed(**params: str) -> list[str]:
        response = api.get("/api/collections/f/documents/", params)
        assert response.status_code == 200, response.json()
        return [d["external_id"] for d in response.json()["results"]]

    since = (long_ago + timedelta(days=1)).isoformat()
    assert listed(changed_since=since) == [docs[i].external_id for i in (1, 2, 3)]
    assert listed(model_version="m-1") == [docs[1].external_id]
    assert listed(model_version="m-2") == [docs[2].external_id]
    assert listed(mention_status="rejected") == [docs[3].external_id]
    assert listed(detection_state="done") == [docs[4].external_id]
    # The streamed file takes the same filters; so does the document list.
    streamed = api.get("/api/collections/f/documents/stream/", {"model_version": "m-1", "as": "jsonl"}).getvalue()
    assert _ids(streamed) == [docs[1].external_id]
    assert [d["external_id"] for d in api.get("/api/documents/", {"model_version": "m-2"}).json()["results"]] == [docs[2].external_id]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"changed_since": "yesterday"}, "changed_since"),
        ({"detection_state": "finished"}, "detection_state"),
        ({"mention_status": "maybe"}, "mention_status"),
        ({"cursor": "not-a-cursor"}, "cursor"),
        ({"page_size": "0"}, "page_size"),
        ({"page_size": "501"}, "page_size"),
        ({"changed_since": ["2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"]}, "changed_since"),
    ],
)
def test_a_bad_filter_or_cursor_is_a_400_naming_it(bob, params: dict[str, str], field: str) -> None:  # type: ignore[no-untyped-def]
    _collection("bad", n=2)
    for path in ("documents/", "documents/stream/"):
        if field in ("cursor", "page_size") and path.endswith("stream/"):
            continue
        response = _api(bob).get(f"/api/collections/bad/{path}", params)
        assert response.status_code == 400 and field in response.json(), (path, response.json())


@pytest.mark.django_db
def test_the_stream_refuses_a_zip_format_and_strangers(bob, charlie) -> None:  # type: ignore[no-untyped-def]
    _collection("z", n=2)
    response = _api(bob).get("/api/collections/z/documents/stream/", {"as": "brat"})
    assert response.status_code == 400 and "as" in response.json()
    assert _api(charlie).get("/api/collections/z/documents/stream/").status_code == 403
    assert _api(bob).get("/api/collections/nope/documents/").status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", ["jsonl", "pubtator", "pubannotation", "bioc-xml", "brat"])
def test_the_export_command_writes_the_collection(fmt: str, tmp_path: Path) -> None:
    _collection("cmd", n=3)
    out = tmp_path / "out"
    call_command("export_collection", "cmd", "--format", fmt, "--out", str(out))
    data = out.read_bytes()
    if fmt == "jsonl":
        assert _ids(data) == ["d0000", "d0001", "d0002"]
    elif fmt == "pubannotation":
        assert [d["sourceid"] for d in json.loads(data)] == ["d0000", "d0001", "d0002"]
    elif fmt == "brat":
        assert data[:2] == b"PK"
    else:
        assert data.decode().count("d0002") >= 1
