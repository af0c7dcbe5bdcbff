"""Malformed input is refused, never a 500 and never a half-import: the API answers 400, the commands a
CommandError, an import job fails, and the message names the file, the line or record and the field at fault
(never SQL text or a server path). Each refusal leaves the database as it was. A UTF-8 byte-order mark is no
fault: the file imports. (Empty files: test_import_empty_files.py; ids repeated in a file:
test_import_repeated_ids.py.)"""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from linker.data import ParseError
from tasks.imports import run_import
from tests.integration.test_import_dictionary import medic_text
from webapp.corpus.formats import FormatError
from webapp.corpus.formats.services import import_documents
from webapp.corpus.importers import import_pubtator
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.imports.models import ImportJob
from webapp.vocab.importers import import_dictionary
from webapp.vocab.models import Dictionary

pytestmark = pytest.mark.django_db

GOOD_JSONL = '{"id": "1", "text": "Asthma attack.", "mentions": [{"start": 0, "end": 6, "type": "Disease", "links": [{"concept_id": "D001249"}]}]}\n'
PUBTATOR = "7|t|Asthma attack\n7|a|In children.\n7\t0\t6\tAsthma\tDisease\tD001249\n\n"
LONG_NAME = "x" * 300  # one path component longer than the 255 bytes a file name may have


def bioc_json(offset: object = 0) -> str:
    document = {
        "id": "42", "infons": {}, "relations": [], "annotations": [],
        "passages": [{"offset": offset, "infons": {"type": "title"}, "text": "Asthma attack", "sentences": [], "relations": [],
                      "annotations": [{"id": "T1", "infons": {"type": "Disease"}, "text": "Asthma",
                                       "locations": [{"offset": 0, "length": 6}]}]}],
    }
    return json.dumps({"source": "", "date": "", "key": "", "infons": {}, "documents": [document]})


def bioc_xml(offset: str = "0", location: str = "0") -> str:
    return (
        "<?xml version='1.0' encoding='utf-8'?><collection><source/><date/><key/>"
        f"<document><id>42</id><passage><offset>{offset}</offset><text>Asthma attack</text>"
        f'<annotation id="T9"><infon key="type">Disease</infon><location offset="{location}" length="6"/><text>Asthma</text></annotation>'
        "</passage></document></collection>"
    )


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def nothing_written() -> bool:
    return not (Collection.objects.exists() or Document.objects.exists() or Mention.objects.exists() or Link.objects.exists())


@pytest.fixture
def alice_api(alice) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(alice)
    return client


def upload(client: APIClient, slug: str, name: str, content: bytes, fmt: str):  # type: ignore[no-untyped-def]
    return client.post(f"/api/collections/{slug}/upload/", {"file": SimpleUploadedFile(name, content), "format": fmt}, format="multipart")


def tmp_zip(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def assert_no_server_detail(message: str) -> None:
    """What a client may read: no SQL, no psycopg wording, no temporary folder of the server."""
    for leak in ("upload-", "/tmp", "COPY", "INSERT", "CONTEXT", "DETAIL", "psycopg", "Traceback"):
        assert leak not in message, message


# --- 1. malformed input: a clear refusal, not a 500 ------------------------------------------------------


def test_bioc_json_passage_offset_null_names_document_passage_and_field(tmp_path: Path) -> None:
    path = write(tmp_path / "c.json", bioc_json(offset=None))
    with pytest.raises(FormatError, match=r"c\.json: document 42 / passage 1: field 'offset' must be an integer \(found None\)"):
        import_documents(path, "bioc-json", collection_slug="b")
    assert nothing_written()


def test_bioc_json_passage_offset_null_is_a_400(alice_api: APIClient) -> None:
    Collection.objects.create(slug="c", title="C")
    response = upload(alice_api, "c", "c.json", bioc_json(offset=None).encode(), "bioc-json")
    assert response.status_code == 400
    assert response.json()["detail"].startswith("c.json: document 42 / passage 1: field 'offset'")
    assert not Document.objects.exists()


def test_bioc_xml_offset_that_is_not_a_number_names_the_field(tmp_path: Path) -> None:
    path = write(tmp_path / "c.xml", bioc_xml(offset="abc"))
    with pytest.raises(FormatError) as exc:
        import_documents(path, "bioc-xml", collection_slug="b")
    assert str(exc.value) == f"{path}: document 42 / passage 1: field 'offset' must be an integer (found 'abc')"
    path = write(tmp_path / "d.xml", bioc_xml(location="x1"))
    with pytest.raises(FormatError, match=r"d\.xml: document 42 / annotation T9: location field 'offset' must be an integer \(found 'x1'\)"):
        import_documents(path, "bioc-xml", collection_slug="b")
    assert nothing_written()


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def test_jsonl_metadata_nested_100000_levels_names_line_and_field(tmp_path: Path) -> None:
    path = write(tmp_path / "docs.jsonl", GOOD_JSONL + '{"id": "2", "text": "Gout.", "metadata": {"a": ' + deep(100_000) + "}}\n")
    with pytest.raises(FormatError, match=r"docs\.jsonl: line 2: field 'metadata' is nested too deeply"):
        import_documents(path, "jsonl", collection_slug="j")
    assert nothing_written()


def test_jsonl_metadata_deeper_than_storage_allows_is_refused(tmp_path: Path) -> None:
    # Deep enough to pass json.loads at the reader's depth, too deep to write back safely.
    path = write(tmp_path / "docs.jsonl", '{"id": "2", "text": "Gout.", "metadata": {"a": ' + deep(500) + "}}\n")
    with pytest.raises(FormatError, match=r"docs\.jsonl: line 1: field 'metadata' is nested too deeply \(more than 64 levels\)"):
        import_documents(path, "jsonl", collection_slug="j")
    assert nothing_written()


def test_bioc_json_nested_100000_levels_is_refused(alice_api: APIClient) -> None:
    Collection.objects.create(slug="c", title="C")
    content = bioc_json().replace('"infons": {}, "documents"', '"infons": {"x": ' + deep(100_000) + '}, "documents"')
    response = upload(alice_api, "c", "c.json", content.encode(), "bioc-json")
    assert response.status_code == 400
    assert response.json()["detail"].startswith("c.json: ") and "nested too deeply" in response.json()["detail"]


def test_jsonl_metadata_nested_100000_levels_is_a_400(alice_api: APIClient) -> None:
    Collection.objects.create(slug="c", title="C")
    content = '{"id": "2", "text": "Gout.", "metadata": {"a": ' + deep(100_000) + "}}\n"
    response = upload(alice_api, "c", "docs.jsonl", content.encode(), "jsonl")
    assert response.status_code == 400
    assert response.json()["detail"].startswith("docs.jsonl: line 1: field 'metadata' is nested too deeply")


@pytest.mark.parametrize(
    ("field", "line", "message"),
    [
        ("id", '{"id": "a\\u0000b", "text": "Gout."}', "line 1: field 'id' contains a NUL character"),
        ("title", '{"id": "1", "title": "G\\u0000", "text": "Gout."}', "line 1: field 'title' contains a NUL character"),
        ("text", '{"id": "1", "text": "Go\\u0000ut."}', "line 1: field 'text' contains a NUL character"),
        ("metadata", '{"id": "1", "text": "Gout.", "metadata": {"k": "v\\u0000"}}', "line 1: field 'metadata' contains a NUL character"),
        ("metadata key", '{"id": "1", "text": "Gout.", "metadata": {"k\\u0000": 1}}', "line 1: field 'metadata' contains a NUL character"),
        ("type", '{"id": "1", "text": "Gout.", "mentions": [{"start": 0, "end": 4, "type": "D\\u0000"}]}',
         "line 1: mention 1: field 'type' contains a NUL character"),
        ("concept_id", '{"id": "1", "text": "Gout.", "mentions": [{"start": 0, "end": 4, "links": [{"concept_id": "D\\u0000"}]}]}',
         "line 1: mention 1: field 'concept_id' contains a NUL character"),
        ("part_texts", '{"id": "1", "text": "Gout.", "mentions": [{"start": 0, "end": 4, "part_texts": ["G\\u0000"]}]}',
         "line 1: mention 1: field 'part_texts' contains a NUL character"),
    ],
)
def test_nul_in_any_jsonl_field_is_refused_naming_line_and_field(tmp_path: Path, field: str, line: str, message: str) -> None:
    path = write(tmp_path / "docs.jsonl", line + "\n")
    with pytest.raises(FormatError) as exc:
        import_documents(path, "jsonl", collection_slug="j")
    assert str(exc.value) == f"{path}: {message}"
    assert_no_server_detail(str(exc.value).replace(str(tmp_path), ""))
    assert nothing_written()


def test_jsonl_link_part_out_of_range_names_the_field(tmp_path: Path) -> None:
    line = '{"id": "1", "text": "Gout.", "mentions": [{"start": 0, "end": 4, "links": [{"part": 40000, "concept_id": "D1"}]}]}'
    path = write(tmp_path / "docs.jsonl", line + "\n")
    with pytest.raises(FormatError) as exc:
        import_documents(path, "jsonl", collection_slug="j")
    assert str(exc.value) == f"{path}: line 1: mention 1: field 'part' must be 0 to 32767 (found 40000)"
    assert nothing_written()


@pytest.mark.django_db(transaction=True)
def test_import_job_of_a_file_with_nul_fails_naming_line_and_field(tmp_path: Path) -> None:
    path = write(tmp_path / "docs.jsonl", GOOD_JSONL + '{"id": "2", "text": "Gout.", "metadata": {"k": "v\\u0000"}}\n')
    job = ImportJob.objects.create(import_kind="documents", path=str(path), params={"collection_slug": "c", "format": "jsonl"})
    assert run_import(job.pk) == ImportJob.State.FAILED
    job.refresh_from_db()
    assert job.message == f"{path.name}: line 2: field 'metadata' contains a NUL character"
    assert nothing_written()


def test_nul_in_document_text_of_pubtator_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path / "c.txt", PUBTATOR + "8|t|Gout\n8|a|in a\x00dult\n\n")
    with pytest.raises(ParseError, match=re.escape(f"{path}:5: field 'text' contains a NUL character")):
        import_pubtator(path, collection_slug="p")
    assert nothing_written()


def test_nul_in_collection_slug_or_title_is_refused_by_the_importers(tmp_path: Path) -> None:
    path = write(tmp_path / "c.txt", PUBTATOR)
    with pytest.raises(ValueError, match="collection slug"):
        import_documents(path, "pubtator", collection_slug="a\x00b")
    for fmt in ("pubtator", "jsonl"):
        with pytest.raises(ValueError, match=r"^the collection title contains a NUL character$"):
            import_documents(path, fmt, collection_slug="c", title="C\x00")
    with pytest.raises(ValueError, match=r"^the collection title contains a NUL character$"):
        import_pubtator(path, collection_slug="c", title="C\x00")
    with pytest.raises(CommandError, match="the collection title contains a NUL character"):
        call_command("import_documents", str(path), "--collection", "c", "--title", "C\x00")
    assert nothing_written()


def test_nul_in_dictionary_title_or_file_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "medic.tsv", medic_text())
    with pytest.raises(ValueError, match=r"^the dictionary title contains a NUL character$"):
        import_dictionary(path, dictionary_slug="medic", title="M\x00")
    with pytest.raises(CommandError, match="the dictionary title contains a NUL character"):
        call_command("import_dictionary", str(path), "--slug", "medic", "--title", "M\x00")
    bad = write(tmp_path / "bad.tsv", medic_text().replace("Diabetes Mellitus, Type 2\t", "Diabetes Mellitus, Type\x002\t"))
    lineno = medic_text().splitlines().index(next(r for r in medic_text().splitlines() if r.startswith("Diabetes Mellitus, Type 2"))) + 1
    with pytest.raises(ParseError) as exc:
        import_dictionary(bad, dictionary_slug="medic")
    assert str(exc.value) == f"{bad}:{lineno}: concept MESH:D003924: field 'preferred_name' contains a NUL character"
    assert not Dictionary.objects.exists()


@pytest.mark.parametrize(
    ("url", "body", "field"),
    [
        ("/api/collections/", {"slug": "a\x00b", "title": "A"}, "slug"),
        ("/api/collections/", {"slug": "ab", "title": "A\x00"}, "title"),
        ("/api/collections/", {"slug": "ab", "title": "A", "dictionary": "m\x00"}, "dictionary"),
        ("/api/documents/", {"collection": "c\x00", "external_id": "1", "text": "Gout."}, "collection"),
        ("/api/documents/", {"collection": "c", "external_id": "1\x00", "text": "Gout."}, "external_id"),
        ("/api/documents/", {"collection": "c", "external_id": "1", "text": "Go\x00ut."}, "text"),
        ("/api/documents/", {"collection": "c", "external_id": "1", "title": "G\x00", "text": "Gout."}, "title"),
        ("/api/documents/", {"collection": "c", "external_id": "1", "text": "Gout.", "metadata": {"k": "v\x00"}}, "metadata"),
        ("/api/documents/", {"collection": "c", "external_id": "1", "text": "Gout.", "metadata": {"k\x00": 1}}, "metadata"),
        ("/api/documents/", {"collection": "c", "external_id": "1", "text": "Gout.", "metadata": {"k": [{"x": "\x00"}]}}, "metadata"),
        ("/api/imports/", {"kind": "documents", "path": "/x", "slug": "a\x00b"}, "slug"),
        ("/api/imports/", {"kind": "documents", "path": "/x", "slug": "ab", "title": "A\x00"}, "title"),
        ("/api/imports/", {"kind": "documents", "path": "/x", "slug": "ab", "dictionary": "m\x00"}, "dictionary"),
        ("/api/imports/", {"kind": "documents", "path": "/x\x00", "slug": "ab"}, "path"),
    ],
)
def test_nul_in_api_input_is_a_400_naming_the_field(alice_api: APIClient, url: str, body: dict, field: str) -> None:  # type: ignore[type-arg]
    Collection.objects.create(slug="c", title="C")
    response = alice_api.post(url, body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()
    assert Collection.objects.count() == 1 and not Document.objects.exists() and not ImportJob.objects.exists()


def test_api_metadata_nested_too_deeply_is_a_400(alice_api: APIClient) -> None:
    Collection.objects.create(slug="c", title="C")
    body = '{"collection": "c", "external_id": "1", "text": "Gout.", "metadata": {"a": ' + deep(100_000) + "}}"
    response = alice_api.post("/api/documents/", body, content_type="application/json")
    assert response.status_code == 400, response.content
    body = '{"collection": "c", "external_id": "1", "text": "Gout.", "metadata": {"a": ' + deep(200) + "}}"
    response = alice_api.post("/api/documents/", body, content_type="application/json")
    assert response.status_code == 400, response.content
    assert "metadata" in response.json()
    assert not Document.objects.exists()


def test_import_path_with_a_name_too_long_is_refused_everywhere(alice_api: APIClient, tmp_path: Path) -> None:
    long_path = str(tmp_path / LONG_NAME)
    response = alice_api.post("/api/imports/", {"kind": "documents", "path": long_path, "slug": "c"}, format="json")
    assert response.status_code == 400
    assert response.json()["path"] == [f"{long_path} is not a readable file (File name too long)"]
    response = alice_api.post("/api/imports/", {"kind": "dictionary", "path": long_path, "slug": "m"}, format="json")
    assert response.status_code == 400
    with pytest.raises(CommandError, match=re.escape(f"{long_path}: cannot open the file (File name too long)")):
        call_command("import_documents", long_path, "--collection", "c")
    with pytest.raises(CommandError, match=re.escape(f"{long_path}: cannot open the file (File name too long)")):
        call_command("import_dictionary", long_path, "--slug", "m")
    for fmt in ("pubtator", "jsonl", "brat"):
        with pytest.raises(ValueError, match=re.escape(f"{long_path}: cannot open the file (File name too long)")):
            import_documents(long_path, fmt, collection_slug="c")
    assert nothing_written() and not Dictionary.objects.exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("kind", ["documents", "dictionary"])
def test_import_job_with_a_name_too_long_fails_with_the_reason(tmp_path: Path, kind: str) -> None:
    long_path = str(tmp_path / LONG_NAME)
    params = {"collection_slug": "c"} if kind == "documents" else {"dictionary_slug": "m"}
    job = ImportJob.objects.create(import_kind=kind, path=long_path, params=params)
    assert run_import(job.pk) == ImportJob.State.FAILED
    job.refresh_from_db()
    assert job.message == f"{Path(long_path).name}: cannot open the file (File name too long)"
    assert nothing_written() and not Dictionary.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_import_job_of_a_malformed_bioc_file_fails_naming_the_field(tmp_path: Path) -> None:
    path = write(tmp_path / "c.json", bioc_json(offset=None))
    job = ImportJob.objects.create(import_kind="documents", path=str(path), params={"collection_slug": "c", "format": "bioc-json"})
    assert run_import(job.pk) == ImportJob.State.FAILED
    job.refresh_from_db()
    assert job.message == f"{path.name}: document 42 / passage 1: field 'offset' must be an integer (found None)"
    assert nothing_written()


# --- 4. messages name file, line and field; a byte-order mark is no error --------------------------------


def test_pubtator_with_a_byte_order_mark_imports(tmp_path: Path) -> None:
    path = tmp_path / "bom.txt"
    path.write_bytes(b"\xef\xbb\xbf" + PUBTATOR.encode())
    report = import_pubtator(path, collection_slug="p")
    assert (report.documents, report.mentions) == (1, 1)
    assert list(Document.objects.values_list("external_id", flat=True)) == ["7"]
    assert Document.objects.get().title == "Asthma attack"


def test_pubtator_with_a_byte_order_mark_still_names_its_lines(tmp_path: Path) -> None:
    path = tmp_path / "bom.txt"
    path.write_bytes(b"\xef\xbb\xbf" + (PUBTATOR + "8|t|Gout\n8|a|x\n8\tabc\t4\tGout\tDisease\tD1\n").encode())
    with pytest.raises(ParseError) as exc:
        import_pubtator(path, collection_slug="p")
    assert str(exc.value) == f"{path}:7: offsets 'abc' '4' are not integers"
    assert nothing_written()


def test_jsonl_and_bioc_json_with_a_byte_order_mark_import(tmp_path: Path) -> None:
    jsonl = tmp_path / "docs.jsonl"
    jsonl.write_bytes(b"\xef\xbb\xbf" + GOOD_JSONL.encode())
    assert import_documents(jsonl, "jsonl", collection_slug="j").documents == 1
    bioc = tmp_path / "c.json"
    bioc.write_bytes(b"\xef\xbb\xbf" + bioc_json().encode())
    assert import_documents(bioc, "bioc-json", collection_slug="b").documents == 1


def test_bioc_json_field_of_the_wrong_type_names_the_document(tmp_path: Path) -> None:
    data = json.loads(bioc_json())
    data["documents"][0]["passages"][0]["text"] = 12
    path = write(tmp_path / "c.json", json.dumps(data))
    with pytest.raises(FormatError, match=r"c\.json: document 42 / passage 1: field 'text' must be a string \(found 12\)"):
        import_documents(path, "bioc-json", collection_slug="b")
    data = json.loads(bioc_json())
    data["documents"][0]["passages"][0]["annotations"][0]["locations"][0]["length"] = "six"
    path = write(tmp_path / "d.json", json.dumps(data))
    with pytest.raises(FormatError, match=r"d\.json: document 42 / annotation T1: location field 'length' must be an integer \(found 'six'\)"):
        import_documents(path, "bioc-json", collection_slug="b")
    assert nothing_written()


def test_a_lone_surrogate_in_an_api_body_is_a_400_not_a_500(alice_api: APIClient) -> None:
    Collection.objects.create(slug="c", title="C")
    body = '{"collection": "c", "external_id": "9", "text": "Gout \\ud800 flares."}'
    response = alice_api.post("/api/documents/", body, content_type="application/json")
    assert response.status_code == 400
    assert "lone surrogate (U+D800)" in response.json()["detail"]
    assert not Document.objects.exists()
