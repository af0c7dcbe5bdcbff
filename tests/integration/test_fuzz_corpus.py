"""Every importer refuses every file of the standing fuzz corpus (tests/fuzz/corpus/<importer>/) with its own
error, a message naming the file, the line (where the file has lines) and the field at fault, never SQL text
or a server path, and leaves the database as it was; and a valid file of each format, mutated at random
(lines deleted or repeated, bytes flipped, cut short, NULs and huge numbers inserted ...), is either imported
or refused the same way, never met with another exception.

Imports go through the functions an import job calls (tasks.imports: ``import_documents`` and
``import_dictionary``, with a progress callback as the job passes one), so this is the path of
``manage.py import_documents`` / ``import_dictionary`` and of ``POST /api/imports/``. The corpus is made by
tests/fuzz/make_corpus.py; each folder's expected.toml says what each refusal must say.
"""

from __future__ import annotations

import gzip
import io
import re
import shutil
import tomllib
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from linker.data import DICTIONARY_FORMATS, ParseError
from webapp.core.limits import LimitExceeded
from webapp.corpus.formats import FORMATS, FormatError
from webapp.corpus.formats.services import import_documents
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.vocab.importers import import_dictionary
from webapp.vocab.models import (
    Concept,
    Dictionary,
    DictionaryVersion,
    HierarchyEdge,
    KnownType,
    KnownTypeVocabulary,
    Name,
)

pytestmark = pytest.mark.django_db

FUZZ = Path(__file__).resolve().parents[1] / "fuzz"
CORPUS = FUZZ / "corpus"
SEEDS = FUZZ / "seeds"
IMPORTERS = (*FORMATS, *DICTIONARY_FORMATS)  # pubtator, bioc-xml, bioc-json, brat, jsonl, medic, dnorm, obo
# make_corpus.py wrote its "too long" cases for this limit, so that they stay small files.
DOCUMENT_CHARS = 10_000
ERRORS: dict[str, type[Exception]] = {
    "ParseError": ParseError, "FormatError": FormatError, "LimitExceeded": LimitExceeded, "ValueError": ValueError,
}
MODELS = (Collection, Document, Mention, Link, Dictionary, DictionaryVersion, Concept, Name, HierarchyEdge,
          KnownType, KnownTypeVocabulary)
# What a message must never carry: SQL or the driver's wording (PostgreSQL's LINE/DETAIL/CONTEXT lines).
SQL_TEXT = ("COPY ", "INSERT ", "SELECT ", "UPDATE ", "CONTEXT:", "DETAIL:", "LINE 1", "psycopg", "Traceback")


def row_counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in MODELS}


def run_import(importer: str, path: Path, *, sniff: bool = False) -> Any:
    """The import an import job runs for this file (tasks.imports._run), into a collection or dictionary that
    does not exist yet (so a refusal must take back what the import created), with progress reported."""

    def progress(done: int, total: int | None) -> None:
        assert total is None or done <= total

    if importer in DICTIONARY_FORMATS:
        return import_dictionary(path, dictionary_slug="fuzz", fmt=None if sniff else importer, progress=progress)
    return import_documents(path, importer, collection_slug="fuzz", dictionary_slug="medic", progress=progress)


def zipped(folder: Path, target: Path) -> Path:
    """A brat folder as the zip an upload is (members sorted, so the same bytes every run)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for member in sorted(folder.iterdir()):
            archive.writestr(member.name, member.read_bytes())
    target.write_bytes(buffer.getvalue())
    return target


def staged(source: Path, folder: Path) -> Path:
    """The case as the importer gets it: a copy in a folder of its own (a brat folder zipped)."""
    folder.mkdir()
    if source.is_dir():
        return zipped(source, folder / f"{source.name}.zip")
    return Path(shutil.copyfile(source, folder / source.name))


def assert_no_server_detail(message: str, folder: Path) -> None:
    # The file's own path opens the message (an upload's folder is cut from it, webapp/api/views/documents.py);
    # the folder anywhere else, the project's folders, or SQL would be detail a client must not read.
    rest = message.replace(f"{folder}/", "")
    for leak in (str(folder), str(FUZZ.parents[1]), *SQL_TEXT):
        assert leak not in rest, f"{leak!r} in {message[:500]!r}"


def refusal(importer: str, path: Path, **options: Any) -> Exception:
    try:
        report = run_import(importer, path, **options)
    except Exception as exc:  # any type: the caller says which one it should have been
        return exc
    pytest.fail(f"{path.name} was imported, not refused: {report.message}")


# --- the corpus ----------------------------------------------------------------------------------------


def expected(importer: str) -> dict[str, dict[str, Any]]:
    return tomllib.loads((CORPUS / importer / "expected.toml").read_text(encoding="utf-8"))


def corpus_cases() -> list[Any]:
    return [
        pytest.param(importer, name, spec, id=f"{importer}/{name}")
        for importer in IMPORTERS
        for name, spec in expected(importer).items()
    ]


def test_every_importer_has_a_corpus_and_every_file_an_expectation() -> None:
    assert sorted(p.name for p in CORPUS.iterdir() if p.is_dir()) == sorted(IMPORTERS)
    for importer in IMPORTERS:
        files = {p.name for p in (CORPUS / importer).iterdir()} - {"expected.toml"}
        assert files == set(expected(importer)), importer
        assert len(files) >= 12, importer
        assert (SEEDS / importer).is_dir(), importer


@pytest.fixture
def existing_data(tmp_path: Path, settings: Any) -> dict[str, int]:
    """A dictionary and a collection already there, as on a workbench in use; the counts a refusal keeps."""
    settings.IMPORT_MAX_DOCUMENT_CHARS = DOCUMENT_CHARS
    import_dictionary(next((SEEDS / "medic").iterdir()), dictionary_slug="medic")
    import_documents(next((SEEDS / "pubtator").iterdir()), "pubtator", collection_slug="existing", dictionary_slug="medic")
    return row_counts()


@pytest.mark.parametrize(("importer", "name", "spec"), corpus_cases())
def test_corpus_file_is_refused_naming_file_line_and_field(
    importer: str, name: str, spec: dict[str, Any], existing_data: dict[str, int], tmp_path: Path
) -> None:
    path = staged(CORPUS / importer / name, tmp_path / "case")
    exc = refusal(importer, path, sniff=spec.get("sniff", False))
    message = str(exc)
    assert type(exc) is ERRORS[spec["error"]], f"{type(exc).__name__}: {message[:500]}"
    assert path.name in message, message[:500]
    if "line" in spec:
        if isinstance(exc, ParseError):
            assert exc.line == spec["line"], message[:500]
        else:
            assert isinstance(exc, FormatError) and re.search(rf"\bline {spec['line']}\b", exc.where), message[:500]
    for part in spec["says"]:
        assert part in message, f"{part!r} not in {message[:500]!r}"
    assert_no_server_detail(message, tmp_path / "case")
    assert row_counts() == existing_data


# --- mutations of a valid file -------------------------------------------------------------------------


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def _delete_line(data: bytes, at: int, _: int) -> bytes:
    lines = _lines(data)
    del lines[at % len(lines)]
    return b"\n".join(lines)


def _duplicate_line(data: bytes, at: int, _: int) -> bytes:
    lines = _lines(data)
    lines.insert(at % len(lines), lines[at % len(lines)])
    return b"\n".join(lines)


def _swap_lines(data: bytes, at: int, other: int) -> bytes:
    lines = _lines(data)
    i, j = at % len(lines), other % len(lines)
    lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)


def _flip_byte(data: bytes, at: int, value: int) -> bytes:
    if not data:
        return data
    i = at % len(data)
    return data[:i] + bytes([data[i] ^ (value or 1)]) + data[i + 1 :]


def _truncate(data: bytes, at: int, _: int) -> bytes:
    return data[: at % (len(data) + 1)]


def _swap_tab_space(data: bytes, at: int, _: int) -> bytes:
    blanks = [i for i, b in enumerate(data) if b in b"\t "]
    if not blanks:
        return data
    i = blanks[at % len(blanks)]
    return data[:i] + (b" " if data[i : i + 1] == b"\t" else b"\t") + data[i + 1 :]


def _insert(piece: Callable[[int], bytes]) -> Callable[[bytes, int, int], bytes]:
    def insert(data: bytes, at: int, value: int) -> bytes:
        i = at % (len(data) + 1)
        return data[:i] + piece(value) + data[i:]

    return insert


def _replace_number(data: bytes, at: int, value: int) -> bytes:
    numbers = list(re.finditer(rb"\d+", data))
    if not numbers:
        return data
    found = numbers[at % len(numbers)]
    return data[: found.start()] + HUGE_NUMBERS[value % len(HUGE_NUMBERS)] + data[found.end() :]


HUGE_NUMBERS = (b"99999999999999999999", b"-1", b"9" * 5000, b"1e309", b"4294967296", b"-0", b"0")
# Characters that mean something to one format or another, and JSON escapes of what PostgreSQL cannot store.
STRUCTURE = (b"\t", b"\n", b"\r", b"|", b"||", b"\"", b"<", b"&", b"{", b"]", b"[Term]\n", b"\xef\xbb\xbf",
             b"\\u0000", b"\\ud800", b"&#0;")
MUTATIONS: dict[str, Callable[[bytes, int, int], bytes]] = {
    "delete a line": _delete_line,
    "duplicate a line": _duplicate_line,
    "swap two lines": _swap_lines,
    "flip a byte": _flip_byte,
    "truncate": _truncate,
    "swap tab and space": _swap_tab_space,
    "insert NUL": _insert(lambda _: b"\x00"),
    "insert a huge number": _insert(lambda v: HUGE_NUMBERS[v % len(HUGE_NUMBERS)]),
    "replace a number": _replace_number,
    "insert invalid UTF-8": _insert(lambda v: (b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xe9")[v % 4]),
    "insert a structural character": _insert(lambda v: STRUCTURE[v % len(STRUCTURE)]),
}
mutation_lists = st.lists(
    st.tuples(st.sampled_from(sorted(MUTATIONS)), st.integers(0, 1 << 16), st.integers(0, 255)), min_size=1, max_size=3
)
# The line-based readers also take gzip (linker.textfiles.open_text): None, or the file gzipped with the byte at
# this position of the compressed stream flipped (past its end: left intact).
GZIP_READERS = {"pubtator", *DICTIONARY_FORMATS}
gzip_damage = st.one_of(st.none(), st.integers(0, 1 << 10))


def mutated_copy(importer: str, mutations: list[tuple[str, int, int]], folder: Path, gzip_flip: int | None = None) -> Path:
    """The importer's seed with the mutations applied (to one member of a brat folder), written under ``folder``;
    with ``gzip_flip``, gzipped and that byte of the compressed stream flipped."""
    seed = next((SEEDS / importer).iterdir())
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir()
    if seed.is_dir():
        members = {p.name: p.read_bytes() for p in sorted(seed.iterdir())}
        for kind, at, value in mutations:
            name = sorted(members)[value % len(members)]
            members[name] = MUTATIONS[kind](members[name], at, value)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, data in members.items():
                archive.writestr(name, data)
        path = folder / f"{seed.name}.zip"
        path.write_bytes(buffer.getvalue())
        return path
    data = seed.read_bytes()
    for kind, at, value in mutations:
        data = MUTATIONS[kind](data, at, value)
    path = folder / seed.name
    if gzip_flip is not None:
        data = gzip.compress(data, mtime=0)
        if gzip_flip < len(data):
            data = data[:gzip_flip] + bytes([data[gzip_flip] ^ 0x5A]) + data[gzip_flip + 1 :]
        path = folder / f"{seed.name}.gz"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("importer", IMPORTERS)
def test_mutated_file_is_imported_or_refused_by_name(importer: str, existing_data: dict[str, int], tmp_path: Path) -> None:
    folder = tmp_path / "mutated"

    @hypothesis_settings(
        max_examples=40, derandomize=True, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
    )
    @given(mutations=mutation_lists, gzip_flip=gzip_damage if importer in GZIP_READERS else st.none())
    def import_or_refuse(mutations: list[tuple[str, int, int]], gzip_flip: int | None) -> None:
        path = mutated_copy(importer, mutations, folder, gzip_flip)
        # Each example in a savepoint rolled back at its end: one example's import does not meet the next.
        with transaction.atomic():
            try:
                run_import(importer, path)
            except Exception as exc:  # any type: checked below
                message = str(exc)
                assert type(exc) in (ParseError, FormatError, LimitExceeded, ValueError), f"{type(exc).__name__}: {message[:500]}"
                assert path.name in message, message[:500]
                assert_no_server_detail(message, folder)
                assert row_counts() == existing_data, message[:500]
            transaction.set_rollback(True)

    import_or_refuse()
