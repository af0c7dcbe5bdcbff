"""The one document writer: documents, gold mentions and gold links of any format, into one collection.

Every import (PubTator, BioC, brat, JSON Lines, documents posted to the API) goes through
:func:`write_documents`, so they share these rules:

- One transaction per import, holding the collection's import lock (a transaction-level advisory lock that
  only imports take) until commit: two imports into one collection run one at a time, and a refused file
  leaves the database exactly as it was. The collection row itself is not locked for the import: curators'
  decisions, training runs and evaluations that reference the collection (or its documents) go on while a
  long import is open.
- Documents whose ``external_id`` is already in the collection are skipped with a warning, never updated:
  importing a file twice is a no-op, and stored curation is never overwritten.
- An id repeated inside one file is not a document "already there": the repeat is kept as its own document
  ``ID#2`` (``ID#3`` ...) with ``metadata["repeat_of"]`` and a warning that the file repeats the id, in every
  format alike (the NCBI Disease training set repeats PMID 8528200, and its published counts include both).
- A file without a single document is refused: an empty or cut-off download is not a successful import.
- Errors name the file and the line (``path:line: message``, :class:`linker.data.ParseError`) when the
  record knows its line, else the file and the element (:class:`FormatError`); what the database would refuse
  for some row of a batch is refused for its record first (:mod:`webapp.corpus.record_checks`).
- Documents go in with ``bulk_create`` (their ids are needed); mentions and links, the bulk of the rows,
  through PostgreSQL ``COPY``, with mention ids read back once per batch by their unique span.
- A document written without a single mention is ``queued`` for mention detection (unless its collection's
  detection is off), and sent to the detection task once the import commits (:mod:`webapp.corpus.detection`).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from webapp.corpus.detection import queue_detection, wants_detection
from webapp.corpus.formats.records import (
    DocumentRecord,
    FormatError,
    LinkRecord,
    MentionRecord,
)
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.corpus.record_checks import check_record, refused_batch, where_in_file
from webapp.corpus.resolver import ConceptResolver, dictionary_version_for
from webapp.vocab.copy import copy_rows
from webapp.vocab.models import Dictionary

__all__ = ["ImportReport", "DuplicateDocument", "DocumentWriter", "write_documents", "locked_collection"]

Progress = Callable[[int, int | None], None]


class IdSet(Protocol):
    def __contains__(self, doc_id: object) -> bool: ...
    def add(self, doc_id: str) -> None: ...

_ANALYZE_AFTER_MENTIONS = 1000  # an import this large refreshes the planner's statistics


class DuplicateDocument(ValueError):
    """A document id that the collection already has, where skipping it is not wanted."""


@dataclass
class ImportReport:
    """What a document import did; ``created`` is False when every document was already there."""

    collection_id: int
    documents: int = 0  # documents created
    skipped_documents: int = 0  # already in the collection
    repeated_documents: int = 0  # ids repeated inside the file, stored as "ID#2"
    mentions: int = 0
    links: int = 0
    resolved_links: int = 0  # links whose concept was found in the dictionary
    unresolved_links: int = 0  # an id was given but no concept matched (kept in concept_ref)
    nil_links: int = 0  # "-1" or no id
    dictionary_version_id: int | None = None
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    created: bool = True
    message: str = ""
    detection_queued: int = 0  # documents without mentions, queued for mention detection


def write_documents(
    batches: Iterable[Sequence[DocumentRecord]],
    *,
    source: str,
    collection_slug: str,
    title: str | None = None,
    dictionary_slug: str | None = None,
    skip_existing: bool = True,
    progress: Progress | None = None,
    total: int | None = None,
) -> ImportReport:
    """Write batches of records into ``collection_slug`` (created if new) in one transaction.

    ``batches`` may be lazy (a file streamed through its reader): a reader's error raised while iterating
    rolls everything back. ``progress`` is called after each batch with (records read, estimated total).
    With ``skip_existing=False`` a document already there raises :class:`DuplicateDocument`.
    """
    started = time.perf_counter()
    dictionary, version = dictionary_version_for(dictionary_slug)
    resolver = ConceptResolver.for_version(version) if version else None
    with transaction.atomic():
        collection = locked_collection(collection_slug, title, dictionary)
        report = ImportReport(collection_id=collection.pk, dictionary_version_id=version.pk if version else None)
        if dictionary and collection.dictionary_id not in (None, dictionary.pk):
            report.warnings.append(
                f"collection {collection.slug} is linked to dictionary {collection.dictionary}; "
                f"gold ids of this file were resolved against {dictionary.slug}"
            )
        writer = DocumentWriter(collection, source, resolver, report, skip_existing=skip_existing)
        read = 0
        for batch in batches:
            writer.add(batch)
            read += len(batch)
            if progress:
                progress(read, max(total or 0, read) or None)
        if not read:
            # Inside the transaction: the collection this import created goes with it.
            raise FormatError(source, "", "no documents: the file is empty or holds none (cut short?)")
        writer.finish()
        # Sent once the import commits (nothing is sent for an import that is refused and rolled back).
        queue_detection(writer.detect_ids)
        report.detection_queued = len(writer.detect_ids)
    if report.mentions >= _ANALYZE_AFTER_MENTIONS:
        # Fresh statistics for the planner, as after a dictionary import: right after a bulk load it still
        # believes these tables hold a row or two and joins them by nested loops (seen: a count of one
        # collection's unresolved links ran for minutes instead of milliseconds).
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE corpus_document; ANALYZE corpus_mention; ANALYZE corpus_link")
    report.created = report.documents > 0
    report.seconds = round(time.perf_counter() - started, 3)
    report.message = (
        f"imported {report.documents} documents ({report.skipped_documents} already there), "
        f"{report.mentions} mentions, {report.links} gold links ({report.resolved_links} resolved, "
        f"{report.unresolved_links} unresolved, {report.nil_links} NIL) into {collection.slug} "
        f"in {report.seconds:.1f} s"
    )
    return report


class DocumentWriter:
    """Writes batches of records as documents, then their mentions, then the mentions' gold links."""

    def __init__(
        self,
        collection: Collection,
        source: str,
        resolver: ConceptResolver | None,
        report: ImportReport,
        *,
        skip_existing: bool = True,
        existing: set[str] | None = None,
    ) -> None:
        self.collection = collection
        self.source = source
        self.resolver = resolver
        self.report = report
        self.skip_existing = skip_existing
        # ``existing``: the caller already knows which of its ids the collection has (a batch-committed import
        # asks per batch rather than holding a million ids).
        self.existing = existing if existing is not None else set(collection.documents.values_list("external_id", flat=True))
        # The ids of this file so far (after numbering), written or skipped; a batch-committed import keeps them in
        # a compact set (webapp.corpus.batch_import.SeenIds), since a file of a million documents has a million.
        self.read_ids: IdSet = set()
        self.repeats: dict[str, str] = {}  # "ID#2" -> "ID", for the repeats numbered here
        self.skipped: list[str] = []
        self.unresolved: dict[str, None] = {}
        self.unresolved_by_type: Counter[str] = Counter()
        self.conjunctions = 0
        self.detect = wants_detection(collection)
        self.detect_ids: list[int] = []  # documents written without mentions: for mention detection

    def next_batch(self, collection: Collection) -> None:
        """A batch-committed import's next transaction (:mod:`webapp.corpus.batch_import`): the collection as read
        under its lock; the ids it asks the database about per batch; the detection of the batch before it sent."""
        self.collection = collection
        self.existing = set()
        self.detect_ids = []

    def add(self, batch: Sequence[DocumentRecord], *, numbered: bool = False) -> None:
        """Write the batch's records (``numbered``: their repeated ids already numbered by :meth:`numbered`)."""
        records = [r for r in (batch if numbered else map(self.numbered, batch)) if self._keep(r)]
        if not records:
            return
        try:
            queued, none = Document.DetectionState.QUEUED, Document.DetectionState.NONE
            documents = Document.objects.bulk_create(
                [
                    Document(collection=self.collection, external_id=r.external_id, title=r.title, text=r.text, metadata=r.metadata,
                             detection_state=queued if self.detect and not r.mentions else none)
                    for r in records
                ]
            )
            self.detect_ids.extend(d.pk for d in documents if d.detection_state == queued)
        except DatabaseError as exc:
            raise refused_batch(self.source, batch, exc) from exc
        self.report.documents += len(documents)
        self.write_annotations([(document.pk, r) for r, document in zip(records, documents, strict=True)])

    def write_annotations(self, documents: Sequence[tuple[int, DocumentRecord]]) -> None:
        """The records' mentions and gold links, for documents (by pk) that have none yet: new ones, or ones whose
        text a batch-committed import has just replaced."""
        if not documents:
            return
        try:
            wanted = [(pk, m) for pk, r in documents for m in self._unique_mentions(r)]
            self._write_mentions(wanted)
            mention_pks = self._mention_pks([pk for pk, _ in documents])
            links = self._write_links((mention_pks[(doc, m.start, m.end, m.mention_type)], m) for doc, m in wanted)
        except DatabaseError as exc:
            raise refused_batch(self.source, [r for _, r in documents], exc) from exc
        self.report.mentions += len(wanted)
        self.report.links += links

    def finish(self) -> None:
        """The warnings that sum the import up; marks the collection as gold once it has gold links."""
        if self.skipped:
            self.report.warnings.append(
                f"{len(self.skipped)} documents already in collection {self.collection.slug} were skipped, "
                f"not updated (e.g. {', '.join(self.skipped[:5])})"
            )
        if self.unresolved:
            by_type = ", ".join(f"{t or 'untyped'} {n}" for t, n in self.unresolved_by_type.most_common())
            self.report.warnings.append(
                f"{sum(self.unresolved_by_type.values())} gold links ({by_type}) name {len(self.unresolved)} ids "
                f"the dictionary lacks; kept as written in concept_ref (e.g. {', '.join(list(self.unresolved)[:5])})"
            )
        if self.conjunctions:
            self.report.warnings.append(
                f"{self.conjunctions} gold links name several concepts joined by '+'; kept in concept_ref "
                "without a concept, since a link points to one concept"
            )
        if self.report.links and not self.collection.has_gold:
            self.collection.has_gold = True
            self.collection.save(update_fields=["has_gold"])

    # --- checks ---

    def numbered(self, record: DocumentRecord) -> DocumentRecord:
        """The record, or for an id this file already used, a copy stored as ``ID#2`` (then ``#3`` ...).

        Counted per file, not against the collection: importing the file again numbers the repeats the same
        way, so they are found already there and skipped like the rest.
        """
        doc_id = record.external_id
        if doc_id not in self.read_ids:
            self.read_ids.add(doc_id)
            return record
        copy = 2
        while f"{doc_id}#{copy}" in self.read_ids:
            copy += 1
        numbered = f"{doc_id}#{copy}"
        self.read_ids.add(numbered)
        self.repeats[numbered] = doc_id
        return replace(record, external_id=numbered, metadata={**record.metadata, "repeat_of": doc_id})

    def _keep(self, record: DocumentRecord) -> bool:
        check_record(self.source, record)
        if record.external_id in self.existing:
            if not self.skip_existing:
                raise DuplicateDocument(f"collection {self.collection.slug} already has a document {record.external_id!r}")
            self.report.skipped_documents += 1
            self.skipped.append(record.external_id)
            return False
        self.existing.add(record.external_id)
        repeat_of = self.repeats.get(record.external_id)
        if repeat_of:
            copy = record.external_id.rpartition("#")[2]
            self.report.repeated_documents += 1
            # PubTator ids are PMIDs; the other formats' ids are whatever the source used.
            label = "PMID" if record.line else "document id"
            self.report.warnings.append(
                f"{where_in_file(self.source, record)}{label} {repeat_of} appears again in the file (copy {copy}); "
                f"stored as its own document {record.external_id}"
            )
        return True

    def _unique_mentions(self, record: DocumentRecord) -> Iterator[MentionRecord]:
        """The record's mentions, each (span, type) once: the database allows one; a repeat is a warning."""
        seen: set[tuple[int, int, str]] = set()
        for m in record.mentions:
            key = (m.start, m.end, m.mention_type)
            if key in seen:
                self.report.warnings.append(
                    f"{where_in_file(self.source, record)}document {record.external_id} annotates {m.start}-{m.end} "
                    f"{m.mention_type} twice; the repeat was left out"
                )
                continue
            seen.add(key)
            yield m

    # --- rows ---

    def _write_mentions(self, wanted: list[tuple[int, MentionRecord]]) -> None:
        now = timezone.now()
        pending, gold = Mention.Status.PENDING.value, Mention.Source.GOLD.value
        copy_rows(
            Mention,
            ["document", "start", "end", "text", "mention_type", "status", "source", "part_texts", "created_at", "updated_at"],
            # The mention's text as the file has it: the span trigger checks it against the document.
            ((doc, m.start, m.end, m.text, m.mention_type, pending, gold, list(m.part_texts), now, now) for doc, m in wanted),
        )

    def _mention_pks(self, document_pks: list[int]) -> dict[tuple[int, int, int, str], int]:
        # COPY returns no ids; the batch's documents are new, so every mention of theirs is one just written.
        table = connection.ops.quote_name(Mention._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(
                f'SELECT document_id, start, "end", mention_type, id FROM {table} WHERE document_id = ANY(%s)',
                [document_pks],
            )
            return {(doc, start, end, mtype): pk for doc, start, end, mtype, pk in cursor.fetchall()}

    def _write_links(self, mentions: Iterable[tuple[int, MentionRecord]]) -> int:
        now = timezone.now()
        rows = (self._link_row(pk, m, link, now) for pk, m in mentions for link in m.links)
        return copy_rows(Link, ["mention", "part", "concept", "concept_ref", "nil", "origin", "model_version", "created_at"], rows)

    def _link_row(self, mention_pk: int, mention: MentionRecord, link: LinkRecord, now: Any) -> tuple[Any, ...]:
        """One gold link per composite part; a part of several ids ("A+B") is kept joined in concept_ref and
        resolves only when it names a single concept, since a link points to one concept."""
        gold = Link.Origin.GOLD.value
        if link.nil or not link.concept_id:
            self.report.nil_links += 1
            return (mention_pk, link.part, None, "", True, gold, "", now)
        single = "+" not in link.concept_id
        concept = self.resolver.resolve(link.concept_id) if self.resolver and single else None
        if concept is not None:
            self.report.resolved_links += 1
        else:
            self.report.unresolved_links += 1
            self._note_unresolved(link.concept_id, single, mention.mention_type)
        return (mention_pk, link.part, concept, link.concept_id, False, gold, "", now)

    def _note_unresolved(self, ref: str, single: bool, mention_type: str) -> None:
        if self.resolver is None:
            return  # nothing to resolve against: not worth a warning
        if not single:
            self.conjunctions += 1
        else:
            self.unresolved.setdefault(ref, None)
            self.unresolved_by_type[mention_type] += 1

# pg_advisory_xact_lock(key1, key2): key1 is the imports' namespace, key2 the collection's id. Only imports
# take it (decisions lock mention rows, webapp.curation.services.decisions, under namespace "link").
_IMPORT_LOCK_NAMESPACE = 0x696D7074  # "impt"


def locked_collection(slug: str, title: str | None, dictionary: Dictionary | None) -> Collection:
    """The collection, created if new, with its import lock held until commit: imports into it run one at a time.

    The lock is an advisory lock no other writer takes, not a lock on the collection row: a ``SELECT ... FOR
    UPDATE`` of the row would also hold up, for the whole import, everything that inserts a row referencing
    the collection (its foreign-key check takes ``FOR KEY SHARE``: a training run or an evaluation on it), and
    any update of the row. A new title or dictionary is written at once: that UPDATE holds the row against
    other updates until commit (``FOR NO KEY UPDATE``), never against inserts that reference it.
    """
    if not connection.in_atomic_block:
        raise RuntimeError("locked_collection() holds its lock until commit: call it inside transaction.atomic()")
    defaults = {"title": title or slug, "dictionary": dictionary}
    collection, created = Collection.objects.get_or_create(slug=slug, defaults=defaults)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_IMPORT_LOCK_NAMESPACE, collection.pk])
    # Read again under the lock: the import before this one may have changed it (and committed).
    collection = Collection.objects.get(pk=collection.pk)
    changed = []
    if title and not created and collection.title != title:
        collection.title = title
        changed.append("title")
    if dictionary and collection.dictionary_id is None:
        collection.dictionary = dictionary
        changed.append("dictionary")
    if changed:
        collection.save(update_fields=changed)
    return collection
