"""Import a dictionary release (MEDIC TSV, DNorm/BioSyn text, OBO; UMLS RRF in :mod:`webapp.vocab.umls`) as one new
DictionaryVersion.

Why it is written this way:

- One transaction per file. A file that fails to parse half-way (a truncated download, a garbled line) leaves
  nothing behind, not even the Dictionary row, and the error names the file and the line.
- The file is streamed through the :mod:`linker.data` readers and written in batches by
  :class:`webapp.vocab.version_writer.VersionWriter`, so memory stays flat and the full CTD MEDIC file
  (12K concepts, 78K names, 20K edges) imports in seconds through PostgreSQL ``COPY``.
- A release is identified twice: by the SHA-256 of the file and by its label. Importing the same file or the
  same release again returns the existing version (``created=False``) instead of duplicating 80K names.
- A file without a single concept (only its header: a download cut short) is refused, not imported as an
  empty release that would then claim the release label and turn the real file away.
"""

from __future__ import annotations

import hashlib
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import transaction

from linker.data import DICTIONARY_FORMATS, iter_dictionary, read_release, sniff_dictionary_format
from linker.dictionary_formats import namespaced
from linker.textfiles import open_text
from webapp.core.batching import batched
from webapp.core.inputs import check_label, input_path
from webapp.vocab.copy import copy_rows, max_length
from webapp.vocab.import_steps import analyze_vocab, existing_version, locked_dictionary, report_existing
from webapp.vocab.models import Dictionary, DictionaryVersion
from webapp.vocab.terms import defer_terms, write_terms
from webapp.vocab.version_writer import MEDIC_SLIM_VOCABULARY, ImportReport, VersionWriter

__all__ = [
    "ImportReport", "Progress", "BATCH_SIZE", "MEDIC_SLIM_VOCABULARY", "import_dictionary", "copy_rows", "max_length",
]

BATCH_SIZE = 5000
_TITLE_MAX = max_length(Dictionary, "title")
_RELEASE_MAX = max_length(DictionaryVersion, "release")

Progress = Callable[[int, int | None], None]


def import_dictionary(
    path: str | Path,
    *,
    dictionary_slug: str,
    title: str | None = None,
    fmt: str | None = None,
    release: str | None = None,
    include_obsolete: bool = False,
    sources: str | Sequence[str] | None = None,
    languages: str | Sequence[str] | None = None,
    include_suppressed: bool = False,
    hierarchy: str = "auto",
    user: Any = None,
    progress: Progress | None = None,
) -> ImportReport:
    """Import one dictionary file as a new version of the dictionary ``dictionary_slug`` (created if new).

    ``fmt`` is sniffed from the file when not given; ``release`` is read from the header (OBO data-version,
    MEDIC "Report created") and falls back to the file name plus the start of its checksum. ``progress`` is
    called with (concepts written, estimated total or None) after every batch.

    Raises :class:`linker.data.ParseError` (``path:line: message``) for a malformed file,
    ``FileNotFoundError`` for a missing one and ``ValueError`` for bad arguments or a file without concepts;
    the database is then exactly as it was before the call.

    A UMLS release (``fmt="umls"``: a folder or a .zip of RRF files) takes the options ``sources`` (SABs, e.g.
    "MSH,OMIM,HPO"; default every source), ``languages`` (LATs; default "ENG"), ``include_suppressed`` and
    ``hierarchy`` (:data:`linker.umls.HIERARCHY_SOURCES`); see :mod:`webapp.vocab.umls`.
    """
    started = time.perf_counter()
    path = input_path(path, folder=True)
    fmt = _checked_format(path, fmt, dictionary_slug, title, release)
    if fmt == "umls":
        return _import_umls_release(path, dictionary_slug=dictionary_slug, title=title, release=release,
                                    sources=sources, languages=languages, include_suppressed=include_suppressed,
                                    hierarchy=hierarchy, user=user, progress=progress)
    if sources or languages or include_suppressed or hierarchy != "auto":
        raise ValueError("sources, languages, suppressed rows and the hierarchy source are options of a UMLS release "
                         f"(format umls), not of {fmt}")
    if path.is_dir():
        raise ValueError(f"{path}: a folder; only a UMLS release (format umls) is imported from a folder")
    checksum = file_sha256(path)
    label = _release_label(path, release, checksum)
    total = _estimate_records(path, fmt) if progress else None

    with transaction.atomic():
        dictionary = locked_dictionary(dictionary_slug, title)
        existing = existing_version(dictionary, label, checksum)
        if existing is not None:
            return report_existing(existing, checksum, started)
        version = DictionaryVersion.objects.create(
            dictionary=dictionary,
            release=label,
            source_format=fmt,
            source_name=str(path)[:500],
            checksum=checksum,
            imported_by=user if getattr(user, "pk", None) else None,
        )
        report = _write_version(version, path, fmt, include_obsolete=include_obsolete, progress=progress, total=total)
        if dictionary.versions.exclude(pk=version.pk).exists():
            # A new release beside older ones: curator synonyms carried over and an index queued for it, on a
            # worker once this commits (webapp.vocab.releases).
            from webapp.vocab.releases import queue_carry_over

            queue_carry_over(version)

    analyze_vocab()
    report.seconds = round(time.perf_counter() - started, 3)
    report.message = (
        f"imported {dictionary.slug} release {label!r}: {report.concepts} concepts, {report.names} names, "
        f"{report.edges} edges, {report.known_types} known types in {report.seconds:.1f} s"
    )
    return report


# --- the steps of an import -------------------------------------------------------------------------


def _checked_format(path: Path, fmt: str | None, dictionary_slug: str, title: str | None, release: str | None) -> str:
    """The file's format (sniffed when not given), once the names the import is to take are valid."""
    _check_slug(dictionary_slug)
    check_label(title, "dictionary title", _TITLE_MAX)
    check_label(release, "release label")  # a longer one is cut to the column, as it always was
    fmt = fmt or sniff_dictionary_format(path)
    if fmt not in DICTIONARY_FORMATS:
        raise ValueError(f"unknown dictionary format {fmt!r}; expected one of {', '.join(DICTIONARY_FORMATS)}")
    return fmt


def _import_umls_release(path: Path, *, dictionary_slug: str, title: str | None, release: str | None,
                         sources: str | Sequence[str] | None, languages: str | Sequence[str] | None,
                         include_suppressed: bool, hierarchy: str, user: Any,
                         progress: Progress | None) -> ImportReport:
    """A UMLS release, its rows kept by the options (languages "ENG" unless given): :mod:`webapp.vocab.umls`."""
    from linker.umls import UmlsFilter
    from webapp.vocab.umls import import_umls, parse_list

    keep = UmlsFilter(languages=parse_list(languages) if languages is not None else ("ENG",),
                      sources=parse_list(sources), include_suppressed=include_suppressed)
    return import_umls(path, dictionary_slug=dictionary_slug, title=title, release=release, keep=keep,
                       hierarchy=hierarchy, user=user, progress=progress)


def _release_label(path: Path, release: str | None, checksum: str) -> str:
    """The release as given, else as the file's header says, else the file name and the start of its checksum."""
    # A NUL in the header's label is cut off there: PostgreSQL stores none, and the rest is no label anyway.
    return (release or read_release(path).partition("\x00")[0] or f"{path.name} sha256:{checksum[:12]}")[:_RELEASE_MAX]


def _write_version(version: DictionaryVersion, path: Path, fmt: str, *, include_obsolete: bool,
                   progress: Progress | None, total: int | None) -> ImportReport:
    """Stream the file's concepts, names and edges into the new version in batches, with its terms and counts; a
    file without a concept raises ``ValueError`` (inside the caller's transaction: the version goes with it)."""
    writer = VersionWriter(version, path, fmt)
    defer_terms()
    records = iter_dictionary(path, fmt, include_obsolete=include_obsolete)
    if fmt == "dnorm":  # bare MeSH ids, stored as every other MEDIC release names them
        records = map(namespaced, records)
    for batch in batched(records, BATCH_SIZE):
        writer.add_concepts(batch)
        if progress:
            progress(writer.report.concepts, max(total or 0, writer.report.concepts) or None)
    if not writer.report.concepts:
        # Raised inside the transaction: the version (and a dictionary created for it) goes with it.
        what = "no [Term] stanza, or only obsolete ones" if fmt == "obo" else "only header or comment lines"
        raise ValueError(f"{path}: no concepts: the file holds {what} (a download cut short?); nothing imported")
    writer.finish()
    write_terms(version)
    version.concept_count = writer.report.concepts
    version.name_count = writer.report.names
    version.edge_count = writer.report.edges
    version.save(update_fields=["concept_count", "name_count", "edge_count"])
    return writer.report


# --- file helpers -----------------------------------------------------------------------------------


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _check_slug(slug: str) -> None:
    try:
        validate_slug(slug)
    except ValidationError:
        raise ValueError(f"dictionary slug {slug!r} must be letters, digits, '-' or '_'") from None
    if len(slug) > 64:
        raise ValueError(f"dictionary slug {slug!r} is longer than 64 characters")


def _estimate_records(path: Path, fmt: str) -> int | None:
    """Records in the file, for a progress bar: a cheap line count, never a parse (that is the import's job)."""
    count = 0
    try:
        with open_text(path) as fh:
            for line in fh:
                if fmt == "obo":
                    count += line.startswith("[Term]")
                else:
                    count += bool(line.strip()) and not line.startswith("#")
    except (OSError, UnicodeDecodeError, EOFError, zlib.error):  # zlib.error: a damaged .gz file
        return None  # the reader will report where the file is broken
    return count
