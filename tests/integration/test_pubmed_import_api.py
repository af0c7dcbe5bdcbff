"""PubMed XML and PubAnnotation are selectable where formats are (issue #45): the upload form tells them from the
file, and an update queued through POST /api/imports/ (with ``force``) reports its counts in
GET /api/imports/<id>/."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from tasks.imports import run_import
from webapp.corpus.formats.services import import_documents
from webapp.corpus.models import Document, Mention
from webapp.curation.services.decisions import decide
from webapp.imports.queueing import document_format

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pubmed"


def test_the_format_is_told_from_the_file() -> None:
    assert document_format("pubmed24n0001.xml.gz", gzip.compress(b"<PubmedArticleSet>")) == "pubmed-xml"
    assert document_format("update.xml", (FIXTURES / "update.xml").read_bytes()[:4096]) == "pubmed-xml"
    assert document_format("docs.json", b'[{"text": "x", "sourceid": "1"}]') == "pubannotation"
    assert document_format("doc.json", b'{"text": "x", "sourcedb": "PubMed", "sourceid": "1"}') == "pubannotation"
    assert document_format("bioc.json", b'{"source": "PMC", "documents": []}') == "bioc-json"
    assert document_format("bioc.xml", b"<?xml version='1.0'?><collection>") == "bioc-xml"


@pytest.mark.django_db(transaction=True)
def test_a_forced_update_through_the_api_reports_its_counts(alice) -> None:  # type: ignore[no-untyped-def]
    import_documents(FIXTURES / "baseline.xml", "pubmed-xml", collection_slug="pm")
    doc = Document.objects.get(external_id="10000004")
    mention = Mention.objects.create(document=doc, start=0, end=10, text=doc.text[:10])
    decide(user=alice, mention_id=mention.pk, action="nil", seen_updated_at=mention.updated_at, teach=False)

    client = APIClient()
    client.force_authenticate(alice)
    body = {"kind": "documents", "path": str(FIXTURES / "update.xml"), "slug": "pm", "format": "pubmed-xml"}
    kept = client.post("/api/imports/", body, format="json").json()
    assert "force" not in kept["params"]
    assert run_import(kept["id"]) == "succeeded"
    report = client.get(f"/api/imports/{kept['id']}/").json()["report"]
    assert (report["new"], report["replaced"], report["unchanged"], report["deleted"], report["kept_curated"]) == (1, 1, 1, 0, 1)

    forced = client.post("/api/imports/", {**body, "force": True}, format="json").json()
    assert forced["params"]["force"] is True
    assert run_import(forced["id"]) == "succeeded"
    report = client.get(f"/api/imports/{forced['id']}/").json()["report"]
    assert (report["deleted"], report["kept_curated"], report["unchanged"]) == (1, 0, 3)
    assert not Document.objects.filter(external_id="10000004").exists()


@pytest.mark.django_db
def test_exports_through_the_api_read_back(alice, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import_documents(FIXTURES / "baseline.xml", "pubmed-xml", collection_slug="pm")
    client = APIClient()
    client.force_authenticate(alice)
    texts = dict(Document.objects.filter(collection__slug="pm").values_list("external_id", "text"))
    for fmt, name in (("pubmed-xml", "again.xml"), ("pubannotation", "again.json")):
        response = client.get(f"/api/collections/pm/export/?as={fmt}")
        assert response.status_code == 200, response.content[:300]
        path = tmp_path / name
        path.write_bytes(response.getvalue())
        import_documents(path, fmt, collection_slug=f"again-{fmt}")
        assert dict(Document.objects.filter(collection__slug=f"again-{fmt}").values_list("external_id", "text")) == texts
