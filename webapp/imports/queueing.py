"""Imports an admin starts in the browser, and how the Imports page shows them.

An uploaded file (a dictionary, a file of documents) or a pasted text is stored in an upload folder of its own
(:mod:`webapp.core.uploads`) and queued as an import job with :func:`webapp.imports.jobs.queue_import`, exactly as
the API does: the worker reads it, the job row reports its progress and the refused line, and the folder goes
when the job ends. What can be refused before anything is queued (a dictionary whose format cannot be told, a
document file of no known format) is refused here, as an :class:`ImportRefused` naming the form field at fault,
and the stored file is removed at once.

A pasted text is one document without mentions, written as a one-line JSON Lines file so that it travels the
same road as any other file of documents.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from django.core.files.uploadedfile import UploadedFile

from linker.data import ParseError, sniff_dictionary_format
from webapp.artifacts.manifests import publish
from webapp.celery import INTERACTIVE_QUEUE
from webapp.core.public import public_message
from webapp.core.uploads import new_upload_folder, upload_folder
from webapp.corpus.formats import FORMATS
from webapp.imports.jobs import queue_import
from webapp.imports.models import ImportJob
from webapp.jobs.models import eta_label
from webapp.linking.models import IndexVersion

DICTIONARY_FORMAT_LABELS = {"medic": "MEDIC TSV", "dnorm": "DNorm/BioSyn text", "obo": "OBO", "umls": "UMLS RRF"}

# A file's name says its format; ".txt" is PubTator only when its first line reads like one, else plain text, and a
# ".zip" is brat only when it holds a .ann file, else a zip of plain texts (both checked below).
DOCUMENT_SUFFIXES = {
    ".pubtator": "pubtator", ".txt": "pubtator", ".xml": "bioc-xml", ".bioc": "bioc-xml", ".json": "bioc-json",
    ".jsonl": "jsonl", ".ndjson": "jsonl", ".zip": "brat", ".tgz": "text",
}
# The file a pasted text is stored as: "pasted-text-<sha>.jsonl", shown on the Imports page as the document's id.
PASTED_PREFIX, PASTED_SUFFIX = "pasted-", ".jsonl"
_PUBTATOR_TITLE = re.compile(rb"[^|\r\n]+\|t\|")
_HEAD_BYTES = 4096


class ImportRefused(ValueError):
    """Refused before anything was queued; ``field`` names the form field at fault (None: the whole form)."""

    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(message)
        self.field = field


# --- storing and queueing -----------------------------------------------------------------------------------


def safe_file_name(name: str | None, default: str = "upload") -> str:
    """The uploaded file's own name, reduced to characters safe in a path (never a folder, never hidden)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", Path(name or "").name).lstrip(".") or default


@contextmanager
def stored_upload(chunks: Iterable[bytes], name: str) -> Iterator[Path]:
    """The bytes stored as ``uploads/<hex>/<name>`` on the artifact volume the workers read; the folder is removed
    if the block raises (refused, or the task queue unreachable), kept for the job otherwise."""
    folder = new_upload_folder()
    try:
        path = folder / name
        with open(path, "wb") as fh:
            for chunk in chunks:
                fh.write(chunk)
        publish(path)  # the worker may be on another host: it fetches the file from the store (webapp.artifacts)
        yield path
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def queue_dictionary_upload(upload: UploadedFile, *, dictionary_slug: str, title: str = "", release: str = "",
                            user: Any = None) -> ImportJob:
    """Queue the import of an uploaded dictionary file as a new release of ``dictionary_slug`` (created if new).

    The format is told from the file's name and first lines as the importer tells it; a file it cannot tell is
    refused on the ``file`` field. Raises :class:`webapp.core.queue.QueueUnavailable` when the task queue is down
    (the job is then failed with the reason and the file removed).
    """
    name = safe_file_name(upload.name, "dictionary")
    with stored_upload(upload.chunks(), name) as path:
        try:
            fmt = sniff_dictionary_format(path)
        except ParseError as exc:
            raise ImportRefused("file", f"{name}: {exc.message}") from None
        params = {"dictionary_slug": dictionary_slug, "title": title or None, "release": release or None, "fmt": fmt}
        return queue_import(ImportJob.Kind.DICTIONARY, path, params, user=user)


def queue_documents_upload(upload: UploadedFile, *, fmt: str, collection_slug: str, title: str = "",
                           dictionary_slug: str | None = None, user: Any = None, force: bool = False) -> ImportJob:
    """Queue the import of an uploaded file of documents (``fmt``: a name of ``FORMATS``, or "" to tell it from
    the file's name and first bytes) into ``collection_slug`` (created if new, with ``title``)."""
    name = safe_file_name(upload.name, "documents")
    if not fmt:
        fmt = document_format(name, _head(upload))
        if fmt == "brat" and not _zip_has_annotations(upload):
            fmt = "text"  # a zip of .txt files alone: plain texts, for mention detection
    if fmt not in FORMATS:
        raise ImportRefused("format", f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    with stored_upload(upload.chunks(), name) as path:
        params = {"collection_slug": collection_slug, "title": title or None, "dictionary_slug": dictionary_slug,
                  "format": fmt}
        if force:  # a PubMed update applied to curated documents too (webapp.corpus.pubmed_import)
            params["force"] = True
        return queue_import(ImportJob.Kind.DOCUMENTS, path, params, user=user)


def queue_text(text: str, *, collection_slug: str, document_title: str = "", collection_title: str = "",
               dictionary_slug: str | None = None, user: Any = None) -> ImportJob:
    """Queue one plain-text document (no mentions) into ``collection_slug`` (created if new). Its id is taken from
    the text (``text-`` and the start of its SHA-256), so the same text added twice is one document. Someone waits on
    it, so it goes to the interactive queue, not behind a long import."""
    document_id = text_document_id(text)
    record = {"id": document_id, "title": document_title, "text": text, "mentions": []}
    line = json.dumps(record, ensure_ascii=False) + "\n"
    with stored_upload([line.encode("utf-8")], f"{PASTED_PREFIX}{document_id}{PASTED_SUFFIX}") as path:
        params = {"collection_slug": collection_slug, "title": collection_title or None,
                  "dictionary_slug": dictionary_slug, "format": "jsonl"}
        return queue_import(ImportJob.Kind.DOCUMENTS, path, params, user=user, queue=INTERACTIVE_QUEUE)


def text_document_id(text: str) -> str:
    return "text-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


# --- telling a file's format --------------------------------------------------------------------------------


def _head(upload: UploadedFile) -> bytes:
    upload.seek(0)
    head = upload.read(_HEAD_BYTES)
    upload.seek(0)
    return head if isinstance(head, bytes) else head.encode()


def document_format(name: str, head: bytes) -> str:
    """The format of a file of documents, from its name, else its first bytes; :class:`ImportRefused` on the
    ``format`` field when neither tells. A ``.txt`` file that is no PubTator is plain text (one document, its
    mentions found by the detector), and so is a ``.tar.gz`` archive (of .txt files)."""
    if name.lower().endswith(".tar.gz"):
        return "text"
    if head.startswith(b"\x1f\x8b"):
        # Gzip: told by what it holds. PubMed's baseline and update files are the gzipped XML the workbench reads
        # most; BioC, JSON Lines and PubAnnotation may come gzipped too.
        head = _gunzipped_head(head)
        if not head or b"PubmedArticleSet" in head:
            return "pubmed-xml"
    elif name.lower().endswith(".xml.gz"):
        return "pubmed-xml"
    lowered = name.lower().removesuffix(".gz")
    body = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if b"<PubmedArticleSet" in body:
        return "pubmed-xml"
    if _looks_like_pubannotation(body):
        return "pubannotation"
    suffix = Path(lowered).suffix
    fmt = DOCUMENT_SUFFIXES.get(suffix)
    if fmt is None:
        if body.startswith(b"PK\x03\x04"):
            fmt = "brat"
        elif body.startswith(b"<"):
            fmt = "bioc-xml"
        elif body.startswith(b"{"):
            fmt = "jsonl" if _first_line_is_json(body) else "bioc-json"
        elif _PUBTATOR_TITLE.match(body):
            fmt = "pubtator"
    elif fmt == "pubtator" and suffix == ".txt" and not _PUBTATOR_TITLE.match(body):
        fmt = "text"  # its first line is no 'PMID|t|title': a plain text
    if fmt is None:
        raise ImportRefused("format", f"cannot tell the format of {name} from its name or its first bytes: choose it")
    return fmt


def _gunzipped_head(head: bytes) -> bytes:
    """The first bytes of a gzip file's content, from its first compressed bytes (b"" when they cannot be read)."""
    try:
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, _HEAD_BYTES)
    except zlib.error:
        return b""


def _looks_like_pubannotation(body: bytes) -> bool:
    """A JSON array, or an object naming a ``sourceid`` and no BioC ``documents``: PubAnnotation's shapes."""
    if body.startswith(b"["):
        return True
    return body.startswith(b"{") and b'"sourceid"' in body and b'"documents"' not in body


def _zip_has_annotations(upload: UploadedFile) -> bool:
    """Whether an uploaded zip holds a brat ``.ann`` file (True too when it cannot be read as a zip: brat's reader
    then names the fault)."""
    upload.seek(0)
    try:
        with zipfile.ZipFile(upload) as archive:
            return any(n.lower().endswith(".ann") for n in archive.namelist())
    except (zipfile.BadZipFile, OSError, ValueError):
        return True
    finally:
        upload.seek(0)


def _first_line_is_json(body: bytes) -> bool:
    line = body.split(b"\n", 1)[0]
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


# --- the Imports page ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JobRow:
    """One import job as the Imports page shows it."""

    job: ImportJob
    file_name: str  # an uploaded file by its own name, a pasted text by its document id, a server file by its path
    source: str  # "uploaded", "pasted" or "" (a file of the server's, named by the API or a command)
    message: str  # the refusal, an upload's server folder left out (the admin knows the file by its name)
    eta_s: float | None  # seconds left, where the total is known and the job has made progress
    highlighted: bool
    needs_index: bool = False  # a dictionary imported, and no active index of it yet: it serves no candidates
    warnings: tuple[str, ...] = ()  # what a succeeded import changed or left out of the file

    @property
    def eta(self) -> str:
        return eta_label(self.eta_s)

    @property
    def shown_warnings(self) -> tuple[str, ...]:
        return self.warnings[:WARNINGS_SHOWN]

    @property
    def more_warnings(self) -> int:
        return max(len(self.warnings) - WARNINGS_SHOWN, 0)

    @property
    def notice(self) -> Notice:
        """The line above the table for the job an admin has just queued: its state, then its outcome (the row
        polls, so "queued" gives way to "succeeded" or "failed" without a reload)."""
        job, what = self.job, self.what
        if job.state == ImportJob.State.QUEUED:
            into = "dictionary" if job.import_kind == ImportJob.Kind.DICTIONARY else "collection"
            return Notice("info", f"{what} is queued as import #{job.pk} into {into} {job.target}; its progress shows below.")
        if job.state == ImportJob.State.RUNNING:
            return Notice("info", f"Import #{job.pk} ({what}) is running; its progress shows below.")
        if job.state == ImportJob.State.FAILED:
            return Notice("error", f"Import #{job.pk} failed: {self.message}")
        count = len(self.warnings)
        warned = f" ({count} warning{'s' if count != 1 else ''}, shown in its row)" if count else ""
        summary = public_message(job.summary).rstrip(".") or "done"
        return Notice("warning" if count else "success", f"Import #{job.pk} succeeded: {summary}{warned}.")

    @property
    def what(self) -> str:
        return "The text" if self.source == "pasted" else self.file_name


@dataclass(frozen=True)
class Notice:
    level: str  # "info", "success", "warning" or "error": the page's message styles
    text: str


WARNINGS_SHOWN = 20  # on the page; the API gives them all


def job_rows(jobs: Iterable[ImportJob], now: datetime, highlight: int | None = None) -> list[JobRow]:
    rows = []
    indexed = set(IndexVersion.objects.filter(state=IndexVersion.State.ACTIVE).values_list("dictionary__slug", flat=True))
    for job in jobs:
        file_name, source, message = job.path, "", public_message(job.message)  # a row stored before the rule too
        if upload_folder(job.path) is not None:
            file_name, source = Path(job.path).name, "uploaded"
            if file_name.startswith(PASTED_PREFIX) and file_name.endswith(PASTED_SUFFIX):
                file_name, source = file_name.removeprefix(PASTED_PREFIX).removesuffix(PASTED_SUFFIX), "pasted"
        needs_index = job.import_kind == ImportJob.Kind.DICTIONARY and job.state == ImportJob.State.SUCCEEDED and (
            job.target not in indexed)
        warnings = tuple(public_message(w) for w in job.warnings)
        rows.append(JobRow(job, file_name, source, message, seconds_left(job, now), job.pk == highlight, needs_index,
                           warnings))
    return rows


def seconds_left(job: ImportJob, now: datetime) -> float | None:
    """A running job's time left at the pace it has kept so far; None without a total or any progress."""
    if job.state != ImportJob.State.RUNNING or not job.started_at or not job.progress_total or job.progress <= 0:
        return None
    elapsed = max((now - job.started_at).total_seconds(), 0.0)
    return max(job.progress_total - job.progress, 0) * elapsed / job.progress
