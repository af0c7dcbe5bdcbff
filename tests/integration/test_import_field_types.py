"""A field of the wrong JSON type is refused by name, in every format's reader, not coerced: a BioC JSON document
id given as an object is not stored as the text "{'a': 1}", an offset given as the string "0" is not read as 0
(BioC JSON types offsets as integers; only XML, which has nothing but text, gives them as digits). The same
holds for JSONL (a boolean id, numbers as part texts), PubTator and brat (offsets of other scripts' digits)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from linker.data import ParseError
from webapp.corpus.formats import FormatError
from webapp.corpus.formats.services import import_documents
from webapp.corpus.models import Collection, Document

pytestmark = pytest.mark.django_db


def bioc_json(document_id: Any = "42", passage_offset: Any = 0, location: Any = None, annotation: Any = None) -> str:
    annotation = annotation or {"id": "T1", "infons": {"type": "Disease"}, "text": "Asthma",
                                "locations": [location or {"offset": 0, "length": 6}]}
    document = {
        "id": document_id, "infons": {}, "relations": [], "annotations": [],
        "passages": [{"offset": passage_offset, "infons": {"type": "title"}, "text": "Asthma attack", "sentences": [],
                      "relations": [], "annotations": [annotation]}],
    }
    return json.dumps({"source": "", "date": "", "key": "", "infons": {}, "documents": [document]})


def refusal(tmp_path: Path, name: str, text: str, fmt: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises((FormatError, ParseError)) as exc:
        import_documents(path, fmt, collection_slug="c")
    assert not Document.objects.exists()
    return str(exc.value).removeprefix(f"{path}: ")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"document_id": {"a": 1}}, "document #1: field 'id' must be a string (found {'a': 1})"),
        ({"document_id": 42}, "document #1: field 'id' must be a string (found 42)"),
        ({"passage_offset": "0"}, "document 42 / passage 1: field 'offset' must be an integer (found '0')"),
        ({"passage_offset": 0.5}, "document 42 / passage 1: field 'offset' must be an integer (found 0.5)"),
        ({"passage_offset": True}, "document 42 / passage 1: field 'offset' must be an integer (found True)"),
        ({"location": {"offset": "0", "length": 6}},
         "document 42 / annotation T1: location field 'offset' must be an integer (found '0')"),
        ({"location": {"offset": 0, "length": [6]}},
         "document 42 / annotation T1: location field 'length' must be an integer (found [6])"),
        ({"annotation": {"id": 7, "infons": {}, "text": "Asthma", "locations": [{"offset": 0, "length": 6}]}},
         "document 42 / annotation #1: field 'id' must be a string (found 7)"),
        ({"annotation": {"id": "T1", "infons": {"identifier": {"a": 1}}, "text": "Asthma", "locations": [{"offset": 0, "length": 6}]}},
         "document 42 / annotation T1: infon 'identifier' must be a string (found {'a': 1})"),
    ],
)
def test_a_bioc_json_field_of_the_wrong_type_is_refused_by_name(tmp_path: Path, kwargs: dict[str, Any], message: str) -> None:
    assert refusal(tmp_path, "c.json", bioc_json(**kwargs), "bioc-json") == message


def test_bioc_json_of_the_right_types_imports_and_a_null_identifier_is_no_link(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    annotation = {"id": "T1", "infons": {"type": "Disease", "identifier": None}, "text": "Asthma",
                  "locations": [{"offset": 0, "length": 6}]}
    path.write_text(bioc_json(annotation=annotation), encoding="utf-8")
    report = import_documents(path, "bioc-json", collection_slug="c")
    assert report.documents == 1
    assert list(Document.objects.values_list("external_id", flat=True)) == ["42"]


def test_the_api_upload_answers_400_naming_the_field(alice) -> None:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(alice)
    Collection.objects.create(slug="c", title="C")
    body = bioc_json(document_id={"a": 1}).encode()
    response = client.post("/api/collections/c/upload/", {"file": SimpleUploadedFile("c.json", body), "format": "bioc-json"},
                           format="multipart")
    assert response.status_code == 400
    assert response.json()["detail"] == "c.json: document #1: field 'id' must be a string (found {'a': 1})"
    assert not Document.objects.exists()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"id": true, "text": "Gout."}', "line 1: field 'id' has the wrong type (bool)"),
        ('{"id": "1", "text": "Gout.", "mentions": [{"start": 0, "end": 4, "part_texts": [1, 2]}]}',
         "line 1: mention 1: field 'part_texts' must be a list of texts"),
        ('{"id": "1", "text": "Gout.", "mentions": [{"start": "0", "end": 4}]}',
         "line 1: mention 1: field 'start' has the wrong type (str)"),
    ],
)
def test_a_jsonl_field_of_the_wrong_type_is_refused_by_name(tmp_path: Path, line: str, message: str) -> None:
    assert refusal(tmp_path, "docs.jsonl", line + "\n", "jsonl") == message


def test_a_pubtator_offset_in_other_digits_is_refused(tmp_path: Path) -> None:
    text = "7|t|Asthma attack\n7|a|In children.\n7\t\u0660\t6\tAsthma\tDisease\tD001249\n\n"
    assert refusal(tmp_path, "c.txt", text, "pubtator").endswith("offsets '\u0660' '6' are not integers")
    text = "7|t|Asthma attack\n7|a|In children.\n7\t+0\t6\tAsthma\tDisease\tD001249\n\n"
    assert refusal(tmp_path, "c.txt", text, "pubtator").endswith("offsets '+0' '6' are not integers")
