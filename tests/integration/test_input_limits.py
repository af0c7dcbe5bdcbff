"""Imports are bounded (webapp.core.limits): an upload, what a zip or a .gz inflates to and how far, a
document's length (and so any offset into it) and a path's length. A refusal names the file or record, the
limit and its setting; the API answers 400, the commands a CommandError, an import job fails, and the
database is left as it was. Limits are lowered here so the files stay small; the defaults are checked once.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import zipfile
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from tasks.imports import run_import
from tests.integration.test_import_dictionary import OBO_TEXT
from webapp.core import limits
from webapp.corpus.formats.services import import_documents
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.imports.models import ImportJob
from webapp.vocab.importers import import_dictionary
from webapp.vocab.models import Dictionary

pytestmark = pytest.mark.django_db

MB = 1_000_000


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def zip_of(files: dict[str, str | bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def bioc_json(offset: object = 0, *, sentence_offset: object = None) -> str:
    passage: dict = {"offset": offset, "infons": {"type": "title"}, "text": "Asthma attack", "sentences": [], "relations": [],
                     "annotations": [{"id": "T1", "infons": {"type": "Disease"}, "text": "Asthma", "locations": [{"offset": 0, "length": 6}]}]}
    if sentence_offset is not None:
        passage = {**passage, "text": None, "annotations": [],
                   "sentences": [{"offset": sentence_offset, "infons": {}, "text": "Asthma", "annotations": [], "relations": []}]}
    document = {"id": "42", "infons": {}, "relations": [], "annotations": [], "passages": [passage]}
    return json.dumps({"source": "", "date": "", "key": "", "infons": {}, "documents": [document]})


def nothing_written() -> bool:
    return not (Document.objects.exists() or Mention.objects.exists() or Link.objects.exists())


@pytest.fixture
def api(alice) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(alice)
    return client


@pytest.fixture
def collection(db) -> Collection:  # type: ignore[no-untyped-def]
    return Collection.objects.create(slug="c", title="C")


def upload(api: APIClient, name: str, content: bytes, fmt: str):  # type: ignore[no-untyped-def]
    return api.post("/api/collections/c/upload/", {"file": SimpleUploadedFile(name, content), "format": fmt}, format="multipart")


def test_the_defaults_are_set_and_documented() -> None:
    readme = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text()  # the configuration table
    for name, value in [
        ("IMPORT_MAX_UPLOAD_BYTES", 100 * MB), ("IMPORT_MAX_DECOMPRESSED_BYTES", 200 * MB), ("IMPORT_MAX_COMPRESSION_RATIO", 100),
        ("IMPORT_MAX_DOCUMENT_CHARS", 10 * MB), ("IMPORT_MAX_PATH_CHARS", 1000),
    ]:
        assert f"| `{name}` | `{value}` |" in readme, name
        if name not in os.environ:
            assert getattr(settings, name) == value


# --- zip bombs -------------------------------------------------------------------------------------------


def test_a_zip_member_that_expands_past_the_limit_is_a_400_naming_it(api: APIClient, collection: Collection, settings) -> None:  # type: ignore[no-untyped-def]
    settings.IMPORT_MAX_DECOMPRESSED_BYTES = 1 * MB
    bomb = zip_of({"doc1.txt": "a" * (3 * MB), "doc1.ann": ""})  # 3 MB of one letter: ~3 KB zipped
    assert len(bomb) < 10_000
    response = upload(api, "brat.zip", bomb, "brat")
    assert response.status_code == 400, response.content
    assert response.json() == {
        "detail": "brat.zip: doc1.txt expands to 3,000,000 bytes, over the 1,000,000-byte limit (IMPORT_MAX_DECOMPRESSED_BYTES)"
    }
    assert nothing_written()


def test_a_zip_that_compresses_like_a_bomb_is_refused_by_its_ratio(tmp_path: Path) -> None:
    # Under the size limit (200 MB), but 2 MB of blanks packed ~1000:1 is no corpus.
    path = tmp_path / "brat.zip"
    path.write_bytes(zip_of({"doc1.txt": " " * (2 * MB)}))
    with pytest.raises(limits.LimitExceeded, match=r"brat\.zip: doc1\.txt expands [\d,]+ times \([\d,]+ bytes to 2,000,000\), "
                       r"over the 100-fold limit \(IMPORT_MAX_COMPRESSION_RATIO\)"):
        import_documents(path, "brat", collection_slug="c")
    assert nothing_written() and not Collection.objects.exists()


def test_zip_members_are_limited_in_all_not_only_one_by_one(tmp_path: Path, settings) -> None:  # type: ignore[no-untyped-def]
    settings.IMPORT_MAX_DECOMPRESSED_BYTES = 1 * MB
    text = "Asthma attack. " * 40_000  # 600,000 bytes each: each under the limit, both over it
    path = tmp_path / "two.zip"
    path.write_bytes(zip_of({"a.txt": text, "b.txt": text}))
    with pytest.raises(limits.LimitExceeded) as exc:
        import_documents(path, "brat", collection_slug="c")
    assert str(exc.value) == f"{path}: its members expand to 1,200,000 bytes, over the 1,000,000-byte limit (IMPORT_MAX_DECOMPRESSED_BYTES)"
    assert nothing_written()


def test_reading_counts_what_it_inflates_even_past_headers_that_understate(tmp_path: Path, settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # The declared sizes pass (as a forged header would): the reading itself stops at the limit.
    monkeypatch.setattr(limits, "check_zip", lambda path, archive: None)
    settings.IMPORT_MAX_DECOMPRESSED_BYTES = 100_000
    path = tmp_path / "brat.zip"
    path.write_bytes(zip_of({"doc1.txt": "Asthma attack. " * 10_000}))
    with pytest.raises(limits.LimitExceeded, match=r"brat\.zip: doc1\.txt takes the archive past the 100,000-byte limit \(IMPORT_MAX_DECOMPRESSED_BYTES\)"):
        import_documents(path, "brat", collection_slug="c")
    assert nothing_written()


def test_a_zip_member_name_longer_than_the_path_limit_is_refused(tmp_path: Path, settings) -> None:  # type: ignore[no-untyped-def]
    settings.IMPORT_MAX_PATH_CHARS = 100
    path = tmp_path / "brat.zip"
    path.write_bytes(zip_of({"a/" * 60 + "doc.txt": "Asthma."}))
    with pytest.raises(limits.LimitExceeded, match=r"a member name .* is 127 characters, over the 100-character limit \(IMPORT_MAX_PATH_CHARS\)"):
        import_documents(path, "brat", collection_slug="c")


def test_a_damaged_zip_member_is_a_format_error_not_a_500(api: APIClient, collection: Collection) -> None:
    archive = bytearray(zip_of({"doc1.txt": "Asthma attack in children. " * 50}))
    at = archive.index(b"doc1.txt") + len(b"doc1.txt") + 5  # inside the member's compressed bytes
    archive[at] ^= 0xFF
    response = upload(api, "brat.zip", bytes(archive), "brat")
    assert response.status_code == 400, response.content
    assert response.json()["detail"].startswith("brat.zip: doc1.txt: ")
    assert nothing_written()


def test_a_gzip_dictionary_that_inflates_past_the_limit_is_refused_by_the_command(tmp_path: Path, settings) -> None:  # type: ignore[no-untyped-def]
    settings.IMPORT_MAX_DECOMPRESSED_BYTES = 1 * MB
    path = tmp_path / "hp.obo.gz"
    path.write_bytes(gzip.compress((OBO_TEXT + "\n" + "! padding\n" * 200_000).encode()))
    with pytest.raises(CommandError, match=r"hp\.obo\.gz: the file expands past the 1,000,000-byte limit \(IMPORT_MAX_DECOMPRESSED_BYTES\)"):
        call_command("import_dictionary", str(path), "--slug", "hpo", verbosity=0)
    assert not Dictionary.objects.exists()


def test_a_gzip_file_within_the_limits_still_imports(tmp_path: Path) -> None:
    path = tmp_path / "hp.obo.gz"
    path.write_bytes(gzip.compress(OBO_TEXT.encode()))
    assert import_dictionary(path, dictionary_slug="hpo").concepts == 3


# --- offsets and document length -------------------------------------------------------------------------


@pytest.mark.parametrize(("offset", "shown"), [(300_000_000, "300,000,000"), (1e12, "1,000,000,000,000")])
def test_a_bioc_passage_offset_past_the_document_limit_is_a_400(api: APIClient, collection: Collection, offset: object, shown: str) -> None:
    # Both once filled the gap before the passage with spaces: a 300M-character document, or a MemoryError 500.
    response = upload(api, "c.json", bioc_json(offset=offset).encode(), "bioc-json")
    assert response.status_code == 400, response.content
    assert response.json() == {
        "detail": f"c.json: document 42 / passage 1: field 'offset' is {shown} characters, "
        "over the 10,000,000-character limit (IMPORT_MAX_DOCUMENT_CHARS)"
    }
    assert nothing_written()


def test_a_bioc_sentence_offset_past_the_limit_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "c.json", bioc_json(offset=0, sentence_offset=50_000_000))
    with pytest.raises(ValueError, match=r"c\.json: document 42 / passage 1: a sentence's field 'offset' is 50,000,000 characters, "
                       r"over the 10,000,000-character limit \(IMPORT_MAX_DOCUMENT_CHARS\)"):
        import_documents(path, "bioc-json", collection_slug="c")
    assert nothing_written()


def test_a_bioc_xml_offset_with_more_digits_than_python_converts_names_the_field(tmp_path: Path) -> None:
    xml = (
        "<?xml version='1.0' encoding='utf-8'?><collection><source/><date/><key/><document><id>42</id>"
        f"<passage><offset>{'9' * 5000}</offset><text>Asthma</text></passage></document></collection>"
    )
    path = write(tmp_path / "c.xml", xml)
    with pytest.raises(ValueError, match=r"c\.xml: document 42 / passage 1: field 'offset' must be an integer"):
        import_documents(path, "bioc-xml", collection_slug="c")


@pytest.mark.django_db(transaction=True)
def test_an_import_job_of_a_far_offset_fails_naming_the_limit(tmp_path: Path) -> None:
    path = write(tmp_path / "c.json", bioc_json(offset=300_000_000))
    job = ImportJob.objects.create(import_kind="documents", path=str(path), params={"collection_slug": "c", "format": "bioc-json"})
    assert run_import(job.pk) == ImportJob.State.FAILED
    job.refresh_from_db()
    assert job.message == (
        f"{path.name}: document 42 / passage 1: field 'offset' is 300,000,000 characters, "
        "over the 10,000,000-character limit (IMPORT_MAX_DOCUMENT_CHARS)"
    )
    assert nothing_written() and not Collection.objects.exists()


def test_a_document_longer_than_the_limit_is_refused_in_every_format(tmp_path: Path, settings) -> None:  # type: ignore[no-untyped-def]
    settings.IMPORT_MAX_DOCUMENT_CHARS = 100
    long_text = ("Asthma " * 20).strip()  # 139 characters
    jsonl = write(tmp_path / "c.jsonl", json.dumps({"id": "1", "text": "short"}) + "\n" + json.dumps({"id": "2", "text": long_text}) + "\n")
    with pytest.raises(ValueError, match=r"c\.jsonl: line 2: the document text is 139 characters, over the 100-character limit \(IMPORT_MAX_DOCUMENT_CHARS\)"):
        import_documents(jsonl, "jsonl", collection_slug="c")
    pubtator = write(tmp_path / "c.txt", f"7|t|{long_text}\n7|a|More.\n\n")
    with pytest.raises(CommandError, match=r"c\.txt:1: the document text is 145 characters, over the 100-character limit"):
        call_command("import_documents", str(pubtator), "--collection", "c", verbosity=0)
    brat = tmp_path / "brat.zip"
    brat.write_bytes(zip_of({"doc1.txt": long_text, "doc1.ann": ""}))
    with pytest.raises(ValueError, match=r"brat\.zip: brat\.zip/doc1\.txt: the document text is 139 characters"):
        import_documents(brat, "brat", collection_slug="c")
    assert nothing_written() and not Collection.objects.exists()


def test_a_document_posted_to_the_api_longer_than_the_limit_is_a_400(api: APIClient, collection: Collection, settings) -> None:  # type: ignore[no-untyped-def]
    settings.IMPORT_MAX_DOCUMENT_CHARS = 100
    response = api.post("/api/documents/", {"collection": "c", "external_id": "1", "text": "x" * 101}, format="json")
    assert response.status_code == 400, response.content
    assert "the document text is 101 characters, over the 100-character limit (IMPORT_MAX_DOCUMENT_CHARS)" in response.json()["detail"]
    assert nothing_written()


# --- uploads and paths -----------------------------------------------------------------------------------


def test_an_upload_over_the_byte_limit_is_a_400_naming_the_file(api: APIClient, collection: Collection, settings) -> None:  # type: ignore[no-untyped-def]
    settings.IMPORT_MAX_UPLOAD_BYTES = 1000
    line = json.dumps({"id": "1", "text": "Asthma attack."}) + "\n"
    response = upload(api, "c.jsonl", (line * 100).encode(), "jsonl")
    assert response.status_code == 400, response.content
    assert response.json() == {"file": [f"c.jsonl is {len(line) * 100:,} bytes, over the 1,000-byte limit (IMPORT_MAX_UPLOAD_BYTES)"]}
    assert nothing_written()


def test_a_body_far_over_the_upload_limit_is_refused_before_it_is_read(api: APIClient, collection: Collection, settings) -> None:  # type: ignore[no-untyped-def]
    settings.IMPORT_MAX_UPLOAD_BYTES = 1000
    response = upload(api, "c.jsonl", b" " * 200_000, "jsonl")
    assert response.status_code == 400, response.content
    (message,) = response.json()["file"]
    assert message.startswith("the request body is ") and message.endswith("bytes, over the 1,000-byte limit (IMPORT_MAX_UPLOAD_BYTES)")
    response = api.post("/api/dictionaries/upload/", {"file": SimpleUploadedFile("hp.obo", b" " * 200_000), "slug": "hpo"}, format="multipart")
    assert response.status_code == 400, response.content
    assert "IMPORT_MAX_UPLOAD_BYTES" in response.json()["file"][0]
    assert not ImportJob.objects.exists()


def test_a_dictionary_upload_over_the_limit_queues_nothing(api: APIClient, settings) -> None:  # type: ignore[no-untyped-def]
    settings.IMPORT_MAX_UPLOAD_BYTES = 100
    response = api.post("/api/dictionaries/upload/", {"file": SimpleUploadedFile("hp.obo", OBO_TEXT.encode()), "slug": "hpo"}, format="multipart")
    assert response.status_code == 400, response.content
    assert response.json() == {"file": [f"hp.obo is {len(OBO_TEXT.encode()):,} bytes, over the 100-byte limit (IMPORT_MAX_UPLOAD_BYTES)"]}
    assert not ImportJob.objects.exists()


def test_a_path_longer_than_the_limit_is_refused_everywhere(api: APIClient, tmp_path: Path, settings) -> None:  # type: ignore[no-untyped-def]
    settings.IMPORT_MAX_PATH_CHARS = 80
    path = write(tmp_path / ("n" * 80 + ".txt"), "7|t|Asthma\n7|a|x\n\n")
    expected = f"is {len(str(path))} characters, over the 80-character limit (IMPORT_MAX_PATH_CHARS)"
    pattern = re.escape(expected)
    response = api.post("/api/imports/", {"kind": "documents", "path": str(path), "slug": "c"}, format="json")
    assert response.status_code == 400, response.content
    assert expected in response.json()["path"][0]
    with pytest.raises(CommandError, match=pattern):
        call_command("import_documents", str(path), "--collection", "c", verbosity=0)
    with pytest.raises(CommandError, match=pattern):
        call_command("import_dictionary", str(path), "--slug", "m", verbosity=0)
    assert nothing_written() and not ImportJob.objects.exists() and not Dictionary.objects.exists()
