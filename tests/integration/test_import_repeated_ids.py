"""An id repeated inside one file is kept, never dropped as "already in the collection": every format stores the
repeat as its own document ``ID#2`` (``ID#3`` ...) with ``metadata["repeat_of"]``, as PubTator import always
has, with a warning that the file itself repeats the id; importing the file again is still a no-op."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from tests.integration.test_import_refusals import (
    PUBTATOR,
    assert_no_server_detail,
    bioc_json,
    bioc_xml,
    tmp_zip,
    upload,
    write,
)
from webapp.corpus.formats.services import import_documents
from webapp.corpus.importers import import_pubtator
from webapp.corpus.models import Collection, Document, Mention

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice_api(alice) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(alice)
    return client


def _ids(slug: str) -> list[str]:
    return sorted(Document.objects.filter(collection__slug=slug).values_list("external_id", flat=True))


def _assert_repeats_kept(report, slug: str, label: str, first: str, copies: int = 2) -> None:  # type: ignore[no-untyped-def]
    repeats = [f"{first}#{n}" for n in range(2, copies + 1)]
    assert report.repeated_documents == copies - 1
    assert (report.documents, report.skipped_documents) == (copies + 1, 0)
    assert _ids(slug) == sorted([first, *repeats, "other"])
    for n, repeat in enumerate(repeats, start=2):
        document = Document.objects.get(collection__slug=slug, external_id=repeat)
        assert document.metadata["repeat_of"] == first
        assert any(f"{label} {first} appears again in the file (copy {n}); stored as its own document {repeat}" in w for w in report.warnings)
    assert not any("already in" in w for w in report.warnings), report.warnings


def test_jsonl_repeated_id_is_stored_as_its_own_document(tmp_path: Path) -> None:
    lines = [
        '{"id": "d1", "text": "Asthma attack.", "mentions": [{"start": 0, "end": 6, "type": "Disease"}]}',
        '{"id": "other", "text": "Gout."}',
        '{"id": "d1", "text": "Asthma again.", "mentions": [{"start": 0, "end": 6, "type": "Disease"}]}',
        '{"id": "d1", "text": "Asthma thrice."}',
    ]
    path = write(tmp_path / "docs.jsonl", "\n".join(lines) + "\n")
    report = import_documents(path, "jsonl", collection_slug="j")
    _assert_repeats_kept(report, "j", "document id", "d1", copies=3)
    assert any(w.startswith(f"{path}: line 3: document id d1 appears again") for w in report.warnings)
    assert Document.objects.get(external_id="d1#2").text == "Asthma again."
    assert Mention.objects.filter(document__external_id="d1#2").count() == 1
    # Importing the same file again numbers the repeats the same way: all found, nothing doubled.
    again = import_documents(path, "jsonl", collection_slug="j")
    assert (again.documents, again.skipped_documents, again.repeated_documents) == (0, 4, 0)
    assert len(_ids("j")) == 4


def test_bioc_repeated_id_is_stored_as_its_own_document(tmp_path: Path) -> None:
    one = json.loads(bioc_json())
    document = one["documents"][0]
    other = {**document, "id": "other", "passages": [{**document["passages"][0], "annotations": []}]}
    one["documents"] = [document, other, document]
    path = write(tmp_path / "c.json", json.dumps(one))
    report = import_documents(path, "bioc-json", collection_slug="b")
    _assert_repeats_kept(report, "b", "document id", "42")
    assert any(w.startswith(f"{path}: document 42: document id 42 appears again") for w in report.warnings)

    xml = bioc_xml()
    doc = xml[xml.index("<document>") : xml.index("</collection>")]
    path = write(tmp_path / "c.xml", xml.replace("</collection>", doc.replace("<id>42</id>", "<id>other</id>") + doc + "</collection>"))
    report = import_documents(path, "bioc-xml", collection_slug="x")
    _assert_repeats_kept(report, "x", "document id", "42")


def test_brat_repeated_name_in_two_folders_is_stored_as_its_own_document(alice_api: APIClient) -> None:
    Collection.objects.create(slug="r", title="R")
    content = tmp_zip({
        "a/d1.txt": "Asthma attack", "a/d1.ann": "T1\tDisease 0 6\tAsthma\n",
        "b/d1.txt": "Gout", "b/d1.ann": "T1\tDisease 0 4\tGout\n",
        "other.txt": "Nothing",
    })
    response = upload(alice_api, "r", "brat.zip", content, "brat")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["documents"], body["skipped_documents"]) == (3, 0)
    assert _ids("r") == ["d1", "d1#2", "other"]
    assert Document.objects.get(external_id="d1#2").text == "Gout"
    warnings = " ".join(body["warnings"])
    assert "document id d1 appears again in the file (copy 2); stored as its own document d1#2" in warnings
    assert_no_server_detail(warnings)


def test_pubtator_repeated_pmid_is_still_numbered_with_its_line(tmp_path: Path) -> None:
    path = write(tmp_path / "c.txt", PUBTATOR + PUBTATOR.replace("7|", "8|").replace("7\t", "8\t") + PUBTATOR)
    report = import_pubtator(path, collection_slug="p")
    assert _ids("p") == ["7", "7#2", "8"]
    assert report.repeated_documents == 1
    assert any(w == f"{path}:9: PMID 7 appears again in the file (copy 2); stored as its own document 7#2" for w in report.warnings)


