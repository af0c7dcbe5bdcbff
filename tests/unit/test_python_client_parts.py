"""The Python client's parts that need no server (client/elwb_client): a file's format told from its name and first
bytes, the multipart body read from disk, the server's error in one line, the job's progress in words. The client
against the real app: tests/integration/test_python_client.py."""

from __future__ import annotations

import gzip
import io
import zipfile
from pathlib import Path

import pytest
from elwb_client import ApiError, Job, ProgressPrinter, UnknownFormat, guess_format
from elwb_client.errors import error_message
from elwb_client.multipart import MultipartFile

PUBMED = b'<?xml version="1.0"?>\n<PubmedArticleSet><PubmedArticle><MedlineCitation><PMID>1</PMID>'


@pytest.mark.parametrize(("name", "content", "expected"), [
    ("a.xml", PUBMED, "pubmed-xml"),
    ("a.xml", b"<?xml version='1.0'?><collection><source>x</source>", "bioc-xml"),
    ("a.txt", b"10021369|t|A title\n10021369|a|An abstract.\n", "pubtator"),
    ("a.pubtator", b"\xef\xbb\xbf10021369|t|A title\n", "pubtator"),
    ("notes.txt", b"Just a note about asthma.\n", "text"),
    ("a.jsonl", b'{"id": "1", "text": "x"}\n', "jsonl"),
    ("a.json", b'{"id": "1", "text": "x"}\n{"id": "2", "text": "y"}\n', "jsonl"),
    ("a.json", b'{"source": "x", "documents": [{"id": "1", "passages": []}]}', "bioc-json"),
    ("a.json", b'[{"text": "x", "denotations": []}]', "pubannotation"),
    ("a.json", b'{"text": "x", "sourceid": "1",\n "denotations": []}', "pubannotation"),
])
def test_a_format_is_told_from_the_name_and_the_first_bytes(tmp_path: Path, name: str, content: bytes, expected: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    assert guess_format(path) == expected


def test_archives_and_compressed_files(tmp_path: Path) -> None:
    (tmp_path / "base.xml.gz").write_bytes(gzip.compress(PUBMED))
    assert guess_format(tmp_path / "base.xml.gz") == "pubmed-xml"
    assert guess_format(tmp_path / "notes.tar.gz") == "text"  # by its name alone
    for name, members, expected in (("brat.zip", ["a.txt", "a.ann"], "brat"), ("notes.zip", ["a.txt", "b.txt"], "text")):
        with zipfile.ZipFile(tmp_path / name, "w") as archive:
            for member in members:
                archive.writestr(member, "x")
        assert guess_format(tmp_path / name) == expected


def test_a_file_that_says_nothing_needs_its_format_named(tmp_path: Path) -> None:
    (tmp_path / "data.bin").write_bytes(b"\x00\x01binary")
    with pytest.raises(UnknownFormat, match="pass format= one of pubtator"):
        guess_format(tmp_path / "data.bin")


def test_the_multipart_body_is_read_from_disk_in_blocks_and_has_its_length(tmp_path: Path) -> None:
    payload = bytes(range(256)) * 1000
    path = tmp_path / 'odd "name".xml'
    path.write_bytes(payload)
    with MultipartFile({"format": "pubmed-xml"}, "file", path) as body:
        boundary = body.content_type.split("boundary=")[1]
        blocks = []
        while block := body.read(8192):
            assert len(block) <= 8192
            blocks.append(block)
        whole = b"".join(blocks)
    assert len(whole) == len(body)
    assert whole.startswith(f'--{boundary}\r\nContent-Disposition: form-data; name="format"\r\n\r\npubmed-xml\r\n'.encode())
    assert b'filename="odd %22name%22.xml"' in whole
    assert whole.endswith(payload + f"\r\n--{boundary}--\r\n".encode())


@pytest.mark.parametrize(("body", "message"), [
    ({"detail": "Invalid token."}, "Invalid token."),
    ({"path": ["/x is not a readable file"], "format": ["bad", "worse"]}, "path: /x is not a readable file; format: bad; worse"),
    ({"non_field_errors": ["Unable to log in with provided credentials."]}, "Unable to log in with provided credentials."),
    (None, "Bad Gateway"),
])
def test_the_servers_error_in_one_line(body: object, message: str) -> None:
    assert error_message(body, "Bad Gateway") == message
    error = ApiError(502, message, method="GET", url="http://x/api/jobs/1/", body=body)
    assert str(error) == f"HTTP 502 (GET http://x/api/jobs/1/): {message}"


def test_a_jobs_progress_in_words_and_on_a_line_that_is_not_a_terminal() -> None:
    job = Job.from_json({"id": 7, "kind": "corpus-run", "label": "Corpus run", "subject": "notes", "state": "running",
                         "progress": 12, "progress_total": 40, "percent": 30, "rate": 3.2, "seconds_left": 8.75,
                         "progress_note": "3 of 10 chunks done"})
    assert job.describe() == "Corpus run 7 (notes)" and not job.finished
    assert job.progress_text() == "12/40 (30%), 3.2/s, about 9 s left, 3 of 10 chunks done"
    out = io.StringIO()
    printer = ProgressPrinter(out)
    printer(job)
    printer(job)  # the same again: not printed twice
    printer(Job.from_json({**job.data, "state": "succeeded", "progress": 40, "percent": 100, "seconds_left": None}))
    printer.close()
    assert out.getvalue().splitlines() == [
        "Corpus run 7 (notes): running, 12/40 (30%), 3.2/s, about 9 s left, 3 of 10 chunks done",
        "Corpus run 7 (notes): succeeded, 40/40 (100%), 3.2/s, 3 of 10 chunks done",
    ]
