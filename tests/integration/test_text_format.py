"""Plain text in: a .txt file is one document, a .zip or .tar.gz of them one per file; PDF-extracted text is
cleaned up without moving what it keeps; binary, non-UTF-8 and empty files are refused by name and line."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from webapp.corpus.formats import FormatError
from webapp.corpus.formats.services import import_documents
from webapp.corpus.formats.text import clean_text, read_text
from webapp.corpus.models import Collection, Document, Mention
from webapp.curation.export import export_documents
from webapp.imports.queueing import document_format

pytestmark = pytest.mark.django_db


def test_pdf_extracted_text_is_cleaned_up_and_other_line_breaks_are_kept() -> None:
    raw = "Heart dis-\r\nease in COVID-\n19 patients.\fPage two\r\nkeeps its lines; co\u00adoperation and soft\u00ad\nhyphens."
    assert clean_text(raw) == (
        "Heart disease in COVID-\n19 patients.\n\nPage two\nkeeps its lines; cooperation and softhyphens.")
    assert clean_text("Type 2-\ndiabetes") == "Type 2-\ndiabetes"  # a digit before the hyphen: left as written
    assert clean_text("Crohn-\nDisease") == "Crohn-\nDisease"  # a capital after it: a real hyphen, most likely


def test_a_txt_file_is_one_document_with_its_first_line_as_title(tmp_path: Path) -> None:
    path = tmp_path / "case-12.txt"
    path.write_bytes("Asthma in winter\r\n\r\nThe patient, 𝛼 years old, had dis-\r\nease.\n".encode())

    report = import_documents(path, "text", collection_slug="notes")

    doc = Document.objects.get()
    assert (report.documents, report.mentions, report.detection_queued) == (1, 0, 1)
    assert (doc.external_id, doc.title) == ("case-12", "Asthma in winter")
    assert doc.text == "Asthma in winter\n\nThe patient, 𝛼 years old, had disease.\n"
    assert doc.text[doc.text.index("disease") : doc.text.index("disease") + 7] == "disease"  # offsets count characters
    assert doc.detection_state == Document.DetectionState.QUEUED  # no mentions: the detector finds them
    assert not Mention.objects.exists()


def test_a_long_first_line_is_no_title_and_the_text_is_kept_whole(tmp_path: Path) -> None:
    line = "word " * 60
    (tmp_path / "long.txt").write_text(f"\n{line}\nsecond line")
    (record,) = read_text(tmp_path / "long.txt")
    assert (record.title, record.text) == ("", f"\n{line}\nsecond line")


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def test_a_zip_and_a_tar_gz_of_txt_files_are_one_document_per_file(tmp_path: Path) -> None:
    members = {"notes/a.txt": b"First note.", "notes/b.txt": b"Second note.", "README.md": b"not a document",
               "__MACOSX/notes/._a.txt": b"\x00\x05"}
    import_documents(_zip(tmp_path / "notes.zip", members), "text", collection_slug="zipped")
    assert list(Document.objects.filter(collection__slug="zipped").values_list("external_id", "text")) == [
        ("a", "First note."), ("b", "Second note.")]

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in {"x/c.txt": b"Third note.", "x/d.txt": b"Fourth-\nNote."}.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    (tmp_path / "more.tar.gz").write_bytes(buffer.getvalue())
    import_documents(tmp_path / "more.tar.gz", "text", collection_slug="tarred")
    assert list(Document.objects.filter(collection__slug="tarred").values_list("external_id", "text")) == [
        ("c", "Third note."), ("d", "Fourth-\nNote.")]


@pytest.mark.parametrize(("name", "content", "says"), [
    ("scan.txt", b"%PDF-1.7\n\nstream\n\x00\x01\x02", "scan.txt: line 4: a NUL byte at byte 17: a binary file, not plain text"),
    ("latin1.txt", "First line\nCaf\u00e9 au lait".encode("latin-1"), "latin1.txt: line 2: not UTF-8 text (invalid continuation byte at byte 14)"),
    ("empty.txt", b"", "empty.txt: the file holds no text (empty, or only blanks)"),
    ("blank.txt", b" \n\n\t\n", "blank.txt: the file holds no text"),
])
def test_binary_non_utf8_and_empty_files_are_refused_by_name_and_line(tmp_path: Path, name: str, content: bytes, says: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(FormatError) as caught:
        import_documents(path, "text", collection_slug="notes")
    assert str(caught.value).replace(f"{tmp_path}/", "").startswith(says), str(caught.value)
    assert not Collection.objects.exists() and not Document.objects.exists()


def test_a_bad_member_of_a_zip_is_named(tmp_path: Path) -> None:
    path = _zip(tmp_path / "notes.zip", {"ok.txt": b"Fine.", "bad.txt": b"one\ntwo \xff"})
    with pytest.raises(FormatError, match=r"notes\.zip: bad\.txt: line 2: not UTF-8 text \(invalid start byte at byte 8\)"):
        import_documents(path, "text", collection_slug="notes")
    with pytest.raises(FormatError, match="no .txt files in the archive"):
        import_documents(_zip(tmp_path / "none.zip", {"a.md": b"x"}), "text", collection_slug="notes")
    assert not Document.objects.exists()


def test_export_of_a_text_collection_round_trips(tmp_path: Path) -> None:
    (tmp_path / "one.txt").write_text("Asthma.\nSecond line.")
    import_documents(tmp_path / "one.txt", "text", collection_slug="notes")
    export = export_documents(Document.objects.all(), "text", stem="notes")
    assert (export.filename, export.content_type) == ("notes.zip", "application/zip")
    (tmp_path / "back").mkdir()
    (tmp_path / "back" / "notes.zip").write_bytes(export.content)
    assert [(r.external_id, r.text) for r in read_text(tmp_path / "back" / "notes.zip")] == [("one", "Asthma.\nSecond line.")]
    for fmt in ("pubtator", "bioc-xml", "jsonl", "brat"):  # and the other writers take it too
        assert export_documents(Document.objects.all(), fmt).content


def test_the_command_imports_plain_text_and_names_a_bad_file(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "note.txt").write_text("Asthma at night.")
    call_command("import_documents", str(tmp_path / "note.txt"), "--collection", "notes", "--format", "text")
    assert "imported 1 documents" in capsys.readouterr().out
    (tmp_path / "bad.txt").write_bytes(b"ok\n\xff")
    with pytest.raises(CommandError, match=r"bad\.txt: line 2: not UTF-8 text"):
        call_command("import_documents", str(tmp_path / "bad.txt"), "--collection", "notes", "--format", "text")


def test_a_txt_that_is_no_pubtator_is_told_as_plain_text() -> None:
    assert document_format("note.txt", b"Asthma at night.\n") == "text"
    assert document_format("corpus.txt", b"123|t|Title\n123|a|Abstract\n") == "pubtator"
    assert document_format("notes.tar.gz", b"\x1f\x8b") == "text"
