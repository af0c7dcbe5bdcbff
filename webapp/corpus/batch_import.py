"""Documents imported a batch per transaction, resumable: what the PubMed import (:mod:`webapp.corpus.pubmed_import`)
and the streamed formats (BioC XML and JSON, JSON Lines, PubAnnotation: :mod:`webapp.corpus.streamed_import`) share.

- **One transaction per batch** of items (documents, and a PubMed update's deletions), each under the collection's
  import lock, so a file of a million documents is written with bounded memory and shows its progress as it goes.
- **Resumable.** With ``job_id``, each batch's transaction also records the file's position (the count of items
  committed) on that job (``Job.result["resume"]``, with the file's name and the collection). A later import of a
  file of the same name into the same collection, whose earlier job did not finish (the worker was killed, the file
  was cut short or refused half-way), reads past that many items and continues from there; its report says so.
- **A document already in the collection** is compared with the file: the same title and text is ``unchanged``
  (nothing is written); a changed text ``replaced`` (its mentions and their links dropped, since their offsets no
  longer hold, the file's own mentions written in their place, or the document queued for mention detection again).
- **Curators' work is never lost silently.** A document with a curator's decision or a gold annotation (a curator
  or gold link on one of its mentions, or a mention a curator decided on or added, a rejected span included) is
  neither replaced nor deleted unless ``force`` is given: it is kept as it is and the report counts and names it
  (``kept_curated``). Forced, the change is made and recorded in the audit log (``document.replaced`` /
  ``document.withdrawn``, with how many curator links, gold links and decided mentions it held).
- **A bad document** stops the import with an error naming the file, the document and what is wrong; the batches
  before it stay committed, the error says how many, and with ``job_id`` importing the file again continues after
  them.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from django.db import connection, transaction
from django.db.models import Q

from linker.data import ParseError
from webapp.audit import actions
from webapp.audit.events import record
from webapp.core.batching import batched
from webapp.corpus.detection import queue_detection, wants_detection
from webapp.corpus.formats.pubmed import Deletion
from webapp.corpus.formats.records import DocumentRecord, FormatError
from webapp.corpus.formats.streams import Positioned
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.corpus.record_checks import check_record
from webapp.corpus.resolver import ConceptResolver, dictionary_version_for
from webapp.corpus.writer import DocumentWriter, ImportReport, Progress, locked_collection
from webapp.jobs.models import Job

__all__ = ["BATCH_ITEMS", "BatchReport", "import_batches", "resume_point"]

BATCH_ITEMS = 500
_NAMED = 10  # ids a warning names
# A mention in one of these states is a curator's outcome (accepted, relinked, NIL, rejected span).
_DECIDED = (Mention.Status.ACCEPTED, Mention.Status.RELINKED, Mention.Status.NIL, Mention.Status.REJECTED)


@dataclass
class BatchReport(ImportReport):
    """A document import's report, with what it did to the documents the collection already had."""

    new: int = 0  # documents the collection did not have
    unchanged: int = 0  # already there with the same title and text: nothing written
    replaced: int = 0  # already there with another text: text replaced, stale mentions dropped
    deleted: int = 0  # withdrawn by a PubMed DeleteCitation
    kept_curated: int = 0  # a change or deletion refused: the document has curator or gold links (``force``)
    resumed_at: int = 0  # items of the file read past: committed by an earlier, unfinished import
    position: int = 0  # items of the file committed
    replaced_ids: list[str] = field(default_factory=list)  # the first few replaced ids
    deleted_ids: list[str] = field(default_factory=list)
    kept_ids: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Source:
    """The file being imported and how its documents are named: ``label`` (``PubMed``, ``BioC XML``) opens the
    report's message, ``id_label`` (``PMID``, ``document``) names documents in warnings; ``number`` repeats of an
    id inside the file as their own documents (``ID#2``), as every format but PubMed's does."""

    path: Path
    label: str
    id_label: str
    number: bool = True


def import_batches(
    source: Source,
    items: Iterable[Positioned | Deletion],
    *,
    collection_slug: str,
    title: str | None = None,
    dictionary_slug: str | None = None,
    progress: Progress | None = None,
    job_id: int | None = None,
    force: bool = False,
    batch_items: int = BATCH_ITEMS,
    total: int | None = None,
    start_at: int = 0,
) -> BatchReport:
    """Import ``items`` (read past the first ``start_at``: see :func:`resume_point`) into ``collection_slug``
    (created if new), a batch per transaction. A reader's error stops it, the batches before it kept, and says so."""
    started = time.perf_counter()
    dictionary, version = dictionary_version_for(dictionary_slug)
    resolver = ConceptResolver.for_version(version) if version else None
    report = BatchReport(collection_id=0, resumed_at=start_at, position=start_at,
                         dictionary_version_id=version.pk if version else None)
    if start_at:
        report.warnings.append(f"continued after item {start_at:,} of {source.path.name}, which an earlier import committed")
    writer: DocumentWriter | None = None
    name = source.path.name
    outer = connection.in_atomic_block
    seen = SeenIds()  # the file's ids, those read past included: a repeat of one after them is numbered all the same
    try:
        for batch in batched(_after(items, start_at, seen if source.number else None), batch_items):
            with transaction.atomic():
                collection = locked_collection(collection_slug, title, dictionary)
                report.collection_id = collection.pk
                if writer is None:
                    writer = DocumentWriter(collection, str(source.path), resolver, report, existing=set())
                    writer.read_ids = seen
                writer.next_batch(collection)
                _Batch(collection, source, report, force, writer).apply(batch)
                report.position = batch[-1].position
                if job_id:
                    _save_position(job_id, name, collection_slug, report.position, done=False)
            if progress:
                progress(report.position, max(total or 0, report.position) or None)
    except (FormatError, ParseError, ValueError) as exc:
        if outer:  # the caller's transaction (an upload through the API) holds every batch: none is committed yet
            raise
        raise _with_committed(exc, report, start_at, job_id) from exc
    if report.position == 0:
        raise FormatError(source.path, "", "no documents: the file is empty or holds none (cut short?)")
    if job_id:
        _save_position(job_id, name, collection_slug, report.position, done=True)
    if writer is not None:
        writer.finish()  # the warnings on ids the dictionary lacks
    _sum_up(report, source, collection_slug, time.perf_counter() - started)
    return report


class SeenIds:
    """The ids a file has used so far (for its repeats, ``ID#2``) in 8 bytes each rather than a string's 60 and more:
    64-bit hashes (BLAKE2b) in a sorted array, the newest few thousand in a set. Two of a million ids share a hash
    with a chance of about 3 in 100 million (the later would be numbered as a repeat)."""

    _MERGE_AT = 4096

    def __init__(self) -> None:
        self._sorted = np.empty(0, dtype=np.uint64)
        self._recent: set[int] = set()

    @staticmethod
    def _key(doc_id: str) -> int:
        return int.from_bytes(hashlib.blake2b(doc_id.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")

    def __contains__(self, doc_id: object) -> bool:
        key = self._key(str(doc_id))
        if key in self._recent:
            return True
        at = int(np.searchsorted(self._sorted, np.uint64(key)))
        return at < len(self._sorted) and int(self._sorted[at]) == key

    def add(self, doc_id: str) -> None:
        self._recent.add(self._key(doc_id))
        if len(self._recent) >= self._MERGE_AT:
            recent = np.fromiter(self._recent, dtype=np.uint64, count=len(self._recent))
            self._sorted = np.union1d(self._sorted, recent)
            self._recent.clear()

    def number(self, doc_id: str) -> None:
        """Add the id as :meth:`DocumentWriter.numbered` numbers it (``ID``, then ``ID#2`` ...)."""
        copy, numbered = 1, doc_id
        while numbered in self:
            copy += 1
            numbered = f"{doc_id}#{copy}"
        self.add(numbered)

    def __len__(self) -> int:
        return len(self._sorted) + len(self._recent)


def _after(items: Iterable[Positioned | Deletion], start_at: int, seen: SeenIds | None) -> Iterator[Positioned | Deletion]:
    """The items after the first ``start_at`` (those are read, and checked, but not written again); the ids of those
    read past go into ``seen``, numbered as when they were written."""
    for item in items:
        if item.position > start_at:
            yield item
        elif seen is not None and isinstance(item, Positioned):
            seen.number(item.record.external_id)


def _with_committed(exc: Exception, report: BatchReport, start_at: int, job_id: int | None) -> Exception:
    """The reader's or a check's error, saying what of the file stays committed before it."""
    committed = report.position - start_at
    if not committed:
        return exc
    again = "import the file again to continue after them" if job_id else "importing the file again skips them"
    note = (f" (the {report.position:,} items before its batch are committed: {report.new} new, {report.replaced} "
            f"replaced, {report.unchanged} unchanged; {again})")
    if isinstance(exc, FormatError):
        return FormatError(exc.path, exc.where, exc.message + note)
    if isinstance(exc, ParseError):
        return ParseError(exc.path, exc.line, exc.message + note)
    return ValueError(str(exc) + note)


def resume_point(file_name: str, collection_slug: str) -> int:
    """Items of ``file_name`` committed into the collection by the latest import of it that did not finish; 0 when
    the latest import of it finished (or none was made)."""
    latest = (
        Job.objects.filter(result__resume__file=file_name, result__resume__collection=collection_slug)
        .order_by("-pk")
        .values_list("result", flat=True)
        .first()
    )
    if not latest or latest["resume"].get("done"):
        return 0
    return int(latest["resume"].get("position") or 0)


def _save_position(job_id: int, file_name: str, slug: str, position: int, *, done: bool) -> None:
    resume = {"file": file_name, "collection": slug, "position": position, "done": done}
    Job.objects.filter(pk=job_id).update(result={"resume": resume})


class _Batch:
    """One batch's items applied in file order: documents compared with the collection, deletions carried out."""

    def __init__(self, collection: Collection, source: Source, report: BatchReport, force: bool,
                 writer: DocumentWriter) -> None:
        self.collection = collection
        self.source = source
        self.path = str(source.path)
        self.report = report
        self.force = force
        self.writer = writer
        self.detect = wants_detection(collection)
        self.detect_ids: list[int] = []  # documents replaced without mentions: detection, after commit
        self.rewrite: list[tuple[int, DocumentRecord]] = []  # documents replaced with the file's mentions

    def apply(self, items: list[Positioned | Deletion]) -> None:
        pending: dict[str, DocumentRecord] = {}  # an id twice in a batch (PubMed): the later version wins
        for item in items:
            if isinstance(item, Deletion):
                self._documents(pending)
                pending = {}
                self._delete(item.pmids)
                continue
            rec = self.writer.numbered(item.record) if self.source.number else item.record
            check_record(self.path, rec)  # before its id is looked up: a NUL in it is named, not a database error
            pending[rec.external_id] = rec
        self._documents(pending)
        links = self.report.links
        self.writer.write_annotations(self.rewrite)
        if self.report.links > links and not self.collection.has_gold:
            Collection.objects.filter(pk=self.collection.pk).update(has_gold=True)
        # Sent once this batch commits, in the detector's own chunks.
        queue_detection(self.detect_ids + self.writer.detect_ids)

    def _existing(self, ids: Iterable[str]) -> dict[str, tuple[int, str, str]]:
        rows = Document.objects.filter(collection=self.collection, external_id__in=list(ids))
        return {ext: (pk, title, text) for ext, pk, title, text in rows.values_list("external_id", "pk", "title", "text")}

    def _curated(self, document_pks: Iterable[int]) -> dict[int, dict[str, int]]:
        """Of these documents, those with curator or gold links or with mentions a curator decided on or added
        (a rejected span leaves no link), with their counts: what an update must not take away unless forced."""
        pks = list(document_pks)
        origins = {Link.Origin.CURATOR.value: "curator_links", Link.Origin.GOLD.value: "gold_links"}
        links = Link.objects.filter(mention__document_id__in=pks, origin__in=list(origins))
        decided = Mention.objects.filter(Q(status__in=_DECIDED) | Q(source=Mention.Source.CURATOR), document_id__in=pks)
        counts: dict[int, dict[str, int]] = {}
        rows = [*links.values_list("mention__document_id", "origin"),
                *((doc, "decided") for doc in decided.values_list("document_id", flat=True))]
        for doc, kind in rows:
            held = counts.setdefault(doc, {"curator_links": 0, "gold_links": 0, "decided_mentions": 0})
            held[origins.get(kind, "decided_mentions")] += 1
        return counts

    def _documents(self, records: dict[str, DocumentRecord]) -> None:
        if not records:
            return
        existing = self._existing(records)
        new = [r for doc_id, r in records.items() if doc_id not in existing]
        changed: dict[str, int] = {}
        for doc_id, (pk, title, text) in existing.items():
            rec = records[doc_id]
            if (rec.title, rec.text) == (title, text):
                self.report.unchanged += 1
            else:
                changed[doc_id] = pk
        curated = self._curated(changed.values())  # asked of the changed alone: a file again changes none
        for doc_id, pk in changed.items():
            rec = records[doc_id]
            if pk in curated and not self.force:
                self._keep(doc_id)
            else:
                self._replace(pk, rec, curated.get(pk))
        if new:
            self.writer.add(new, numbered=True)
            self.report.new += len(new)

    def _replace(self, pk: int, rec: DocumentRecord, held: dict[str, int] | None) -> None:
        Mention.objects.filter(document_id=pk).delete()  # their offsets were into the old text (links go with them)
        detect = self.detect and not rec.mentions
        state = Document.DetectionState.QUEUED if detect else Document.DetectionState.NONE
        Document.objects.filter(pk=pk).update(text=rec.text, title=rec.title, metadata=rec.metadata,
                                              detection_state=state, detected_at=None, detection_model="")
        if detect:
            self.detect_ids.append(pk)
        elif rec.mentions:
            self.rewrite.append((pk, rec))
        self.report.replaced += 1
        _name(self.report.replaced_ids, rec.external_id)
        if held:
            self._audit(actions.DOCUMENT_REPLACED, pk, rec.external_id, held)

    def _delete(self, ids: tuple[str, ...]) -> None:
        existing = self._existing(ids)
        curated = self._curated(pk for pk, _, _ in existing.values())
        doomed = []
        for doc_id, (pk, _, _) in existing.items():
            if pk in curated and not self.force:
                self._keep(doc_id)
                continue
            doomed.append(pk)
            self.report.deleted += 1
            _name(self.report.deleted_ids, doc_id)
            if pk in curated:
                self._audit(actions.DOCUMENT_WITHDRAWN, pk, doc_id, curated[pk])
        Document.objects.filter(pk__in=doomed).delete()  # mentions, links, decisions by cascade

    def _keep(self, doc_id: str) -> None:
        self.report.kept_curated += 1
        _name(self.report.kept_ids, doc_id)

    def _audit(self, action: str, pk: int, doc_id: str, held: dict[str, int]) -> None:
        record(action, object_type="document", object_id=pk, label=f"{self.source.id_label} {doc_id} in {self.collection.slug}",
               before=held, after={"file": self.source.path.name})


def _name(names: list[str], doc_id: str) -> None:
    if len(names) < _NAMED:
        names.append(doc_id)


def _sum_up(report: BatchReport, source: Source, slug: str, seconds: float) -> None:
    named = source.id_label
    if report.kept_curated:
        report.warnings.append(
            f"{report.kept_curated} documents with curators' decisions or gold annotations were kept as they were, though the file changes or "
            f"withdraws them (e.g. {named} {', '.join(report.kept_ids)}); import again with force to apply it"
        )
    if report.replaced:
        report.warnings.append(
            f"{report.replaced} documents' text changed and was replaced, their earlier mentions dropped "
            f"(e.g. {named} {', '.join(report.replaced_ids)})"
        )
    report.skipped_documents = report.unchanged  # already there, nothing written
    report.created = report.new > 0
    report.seconds = round(seconds, 3)
    resumed = f", continued after item {report.resumed_at:,}" if report.resumed_at else ""
    deleted = f"{report.deleted} deleted, " if report.deleted or not source.number else ""
    report.message = (
        f"{source.label}: {report.new} new, {report.replaced} replaced, {report.unchanged} unchanged, {deleted}"
        f"{report.kept_curated} kept (curated) in {slug}{resumed}; {report.mentions} mentions, {report.links} gold "
        f"links ({report.resolved_links} resolved, {report.unresolved_links} unresolved, {report.nil_links} NIL), "
        f"in {report.seconds:.1f} s"
    )
