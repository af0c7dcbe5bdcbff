"""What the database would refuse for some row of a batch, refused first for the record, naming the file's line or
element (an import refused by the database would name a batch at best): ids, texts and types too long, characters
PostgreSQL cannot store, spans outside the text, composite parts out of range or linked twice.
:class:`webapp.corpus.writer.DocumentWriter` checks every record here before writing it."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import DatabaseError

from linker.data import ParseError
from webapp.core import limits
from webapp.corpus.formats.records import (
    MAX_METADATA_DEPTH,
    DocumentRecord,
    FormatError,
    MentionRecord,
    too_deep,
    unstorable_character,
)
from webapp.corpus.models import Document, Link, Mention, mention_too_long
from webapp.vocab.copy import max_length

__all__ = ["check_record", "refused", "refused_batch", "where_in_file"]

_EXTERNAL_ID_MAX = max_length(Document, "external_id")
_TYPE_MAX = max_length(Mention, "mention_type")
_REF_MAX = max_length(Link, "concept_ref")
_PART_MAX = 32767  # Link.part is a PositiveSmallIntegerField


def check_record(source: str, record: DocumentRecord) -> None:
    """Refuse, naming the line or element, what the database would refuse for some row of a batch."""
    if not record.external_id or len(record.external_id) > _EXTERNAL_ID_MAX:
        raise refused(source, record, None, f"a document id must have 1 to {_EXTERNAL_ID_MAX} characters ({record.external_id[:40]!r})")
    # Every format (and POST /api/documents/) comes through here: one place bounds what a page, the
    # linker and an export will later hold in memory for one document.
    too_long = limits.document_chars_over("the document text is", len(record.text))
    if too_long:
        raise refused(source, record, None, too_long)
    # PostgreSQL stores no NUL character (text or jsonb), and the driver cannot encode a lone surrogate (JSON
    # decodes "\ud800" to one): named here, not as a database or encoding error about some row of a batch.
    for name, value in (("id", record.external_id), ("title", record.title), ("text", record.text), ("metadata", record.metadata)):
        bad = unstorable_character(value)
        if bad:
            raise refused(source, record, None, f"field {name!r} contains {bad}")
    if too_deep(record.metadata):
        raise refused(source, record, None, f"field 'metadata' is nested too deeply (more than {MAX_METADATA_DEPTH} levels)")
    for m in record.mentions:
        if not 0 <= m.start < m.end <= len(record.text):
            raise refused(source, record, m, f"span {m.start}-{m.end} outside the document text (length {len(record.text)})")
        too_long = mention_too_long(record.text[m.start : m.end])
        if too_long:
            raise refused(source, record, m, too_long)
        for name, value in (("type", m.mention_type), ("part_texts", m.part_texts), ("concept_id", [link.concept_id for link in m.links])):
            bad = unstorable_character(value)
            if bad:
                raise refused(source, record, m, f"field {name!r} contains {bad}")
        if len(m.mention_type) > _TYPE_MAX:
            raise refused(source, record, m, f"mention type {m.mention_type[:40]!r}... is longer than {_TYPE_MAX}")
        parts = [link.part for link in m.links]
        bad_part = next((p for p in parts if not 0 <= p <= _PART_MAX), None)
        if bad_part is not None:
            raise refused(source, record, m, f"field 'part' must be 0 to {_PART_MAX} (found {bad_part})")
        if len(parts) != len(set(parts)):
            raise refused(source, record, m, "a composite part is linked twice")
        too_long = [link.concept_id for link in m.links if len(link.concept_id) > _REF_MAX]
        if too_long:
            raise refused(source, record, m, f"id {too_long[0][:40]!r}... is longer than {_REF_MAX}")


def where_in_file(source: str, record: DocumentRecord) -> str:
    """``path:line: `` or ``path: element: `` before a warning about the record."""
    if record.line:
        return f"{source}:{record.line}: "
    return f"{source}: {record.where}: " if record.where else f"{source}: "


def refused(source: str, record: DocumentRecord, mention: MentionRecord | None, message: str) -> ValueError:
    """The error that refuses ``record`` (or one of its mentions), naming the file's line or element."""
    if record.line:
        # A PubTator mention is a line of its own, below its document's title line: name the one at fault.
        return ParseError(source, (mention.line if mention else 0) or record.line, message)
    where = (mention.where if mention else "") or record.where or f"document {record.external_id}"
    return FormatError(source, where, message)


def refused_batch(source: str, batch: Sequence[DocumentRecord], exc: DatabaseError) -> ValueError:
    """The error that refuses a batch the database refused, naming its lines or documents."""
    # PostgreSQL's first line says what is wrong; the LINE/DETAIL/CONTEXT lines after it quote SQL and rows.
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    first, last = batch[0], batch[-1]
    if first.line:
        return ParseError(source, first.line, f"the database refused a document of lines {first.line}-{last.line}: {reason}")
    return FormatError(source, "", f"the database refused one of documents {first.external_id} to {last.external_id}: {reason}")
