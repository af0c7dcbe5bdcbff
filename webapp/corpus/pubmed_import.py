"""Import PubMed baseline and update files into a collection: streamed, committed per batch, resumable.

Unlike the other formats (one transaction per file, documents already there skipped), a PubMed file is read as
what it is, one file of a series that keeps a collection in step with PubMed:

- **One transaction per batch** of :data:`BATCH_ITEMS` top-level items (articles and deletions), each under the
  collection's import lock, so a baseline file of 30,000 articles (and a collection of a million) is written with
  bounded memory and shows its progress as it goes.
- **Resumable.** With ``job_id``, each batch's transaction also records the file's position (the count of items
  committed) on that job (``Job.result["resume"]``, with the file's name and the collection). A later import of a
  file of the same name into the same collection, whose earlier job did not finish (the worker was killed, the
  file was cut short), reads past that many items and continues from there; its report says where it resumed.
- **A PMID already in the collection** is compared with the file: the same title and text is ``unchanged`` (nothing
  is written); a changed text ``replaced`` (its mentions and their links dropped, since their offsets no longer
  hold, and the document queued for mention detection again); a new PMID is written as any import writes it.
- **A ``DeleteCitation``** removes the listed documents (their mentions and links with them).
- **Curators' work is never lost silently.** A document with a curator's decision or a gold annotation (a curator
  or gold link on one of its mentions, or a mention a curator decided on or added, a rejected span included; a
  PubTator gold corpus's abstract differs from PubMed's XML in small ways, and its annotations' offsets would be
  lost with it) is neither replaced nor deleted by an update unless ``force`` is given: it is kept as it is and the report counts and names it (``kept_curated``). Forced, the change is made
  and recorded in the audit log (``document.replaced`` / ``document.withdrawn``, with how many curator links,
  gold links and decided mentions it held), since a deleted document's decisions go with it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction
from django.db.models import Q

from webapp.audit import actions
from webapp.audit.events import record
from webapp.core.batching import batched
from webapp.core.inputs import input_path
from webapp.corpus.detection import queue_detection, wants_detection
from webapp.corpus.formats.pubmed import Article, Deletion, count_articles, iter_pubmed
from webapp.corpus.formats.records import DocumentRecord
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.corpus.record_checks import check_record
from webapp.corpus.resolver import dictionary_version_for
from webapp.corpus.writer import DocumentWriter, ImportReport, Progress, locked_collection
from webapp.jobs.models import Job

__all__ = ["BATCH_ITEMS", "PubmedReport", "import_pubmed", "resume_point"]

BATCH_ITEMS = 500
_NAMED = 10  # PMIDs a warning names
# A mention in one of these states is a curator's outcome (accepted, relinked, NIL, rejected span).
_DECIDED = (Mention.Status.ACCEPTED, Mention.Status.RELINKED, Mention.Status.NIL, Mention.Status.REJECTED)


@dataclass
class PubmedReport(ImportReport):
    """A document import's report, with what an update did to the PMIDs the collection already had."""

    new: int = 0  # PMIDs the collection did not have
    unchanged: int = 0  # already there with the same title and text: nothing written
    replaced: int = 0  # already there with another text: text replaced, stale mentions dropped
    deleted: int = 0  # withdrawn by a DeleteCitation
    kept_curated: int = 0  # a change or deletion refused: the document has curator or gold links (``force``)
    resumed_at: int = 0  # items of the file read past: committed by an earlier, unfinished import
    position: int = 0  # items of the file committed
    replaced_ids: list[str] = field(default_factory=list)  # the first few replaced PMIDs
    deleted_ids: list[str] = field(default_factory=list)
    kept_ids: list[str] = field(default_factory=list)


def import_pubmed(
    path: str | Path,
    *,
    collection_slug: str,
    title: str | None = None,
    dictionary_slug: str | None = None,
    progress: Progress | None = None,
    job_id: int | None = None,
    force: bool = False,
    batch_items: int | None = None,
) -> PubmedReport:
    """Import a PubMed XML file (``.xml`` or ``.xml.gz``) into ``collection_slug`` (created if new), a batch per
    transaction. Raises :class:`FormatError` for a malformed file: the batches before the fault stay committed,
    and with ``job_id`` a later import of the file continues after them."""
    started = time.perf_counter()
    path = input_path(path)
    dictionary, _version = dictionary_version_for(dictionary_slug)
    start_at = resume_point(path.name, collection_slug) if job_id else 0
    total = count_articles(path) if progress else None
    report = PubmedReport(collection_id=0, resumed_at=start_at, position=start_at)
    if start_at:
        report.warnings.append(f"continued after item {start_at:,} of {path.name}, which an earlier import committed")
    for batch in batched(iter_pubmed(path, start_at), batch_items or BATCH_ITEMS):
        with transaction.atomic():
            collection = locked_collection(collection_slug, title, dictionary)
            report.collection_id = collection.pk
            _Batch(collection, str(path), report, force).apply(batch)
            report.position = batch[-1].position
            if job_id:
                _save_position(job_id, path.name, collection_slug, report.position, done=False)
        if progress:
            progress(report.position, max(total or 0, report.position) or None)
    if job_id:
        _save_position(job_id, path.name, collection_slug, report.position, done=True)
    _sum_up(report, collection_slug, time.perf_counter() - started)
    return report


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
    """One batch's items applied in file order: articles compared with the collection, deletions carried out."""

    def __init__(self, collection: Collection, source: str, report: PubmedReport, force: bool) -> None:
        self.collection = collection
        self.source = source
        self.report = report
        self.force = force
        self.detect = wants_detection(collection)
        self.detect_ids: list[int] = []  # documents written or replaced without mentions: detection, after commit

    def apply(self, items: list[Article | Deletion]) -> None:
        pending: dict[str, DocumentRecord] = {}  # a PMID twice in a batch: the later version wins
        for item in items:
            if isinstance(item, Article):
                pending[item.record.external_id] = item.record
            else:
                self._articles(pending)
                pending = {}
                self._delete(item.pmids)
        self._articles(pending)
        queue_detection(self.detect_ids)  # sent once this batch commits, in the detector's own chunks

    def _existing(self, pmids: Iterable[str]) -> dict[str, tuple[int, str, str]]:
        rows = Document.objects.filter(collection=self.collection, external_id__in=list(pmids))
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

    def _articles(self, records: dict[str, DocumentRecord]) -> None:
        if not records:
            return
        existing = self._existing(records)
        curated = self._curated(pk for pk, _, _ in existing.values())
        new = [r for pmid, r in records.items() if pmid not in existing]
        for pmid, (pk, title, text) in existing.items():
            rec = records[pmid]
            check_record(self.source, rec)  # what a new document is checked for (its length, its characters)
            if (rec.title, rec.text) == (title, text):
                self.report.unchanged += 1
            elif pk in curated and not self.force:
                self._keep(pmid)
            else:
                self._replace(pk, rec, curated.get(pk))
        if new:
            writer = DocumentWriter(self.collection, self.source, None, self.report, existing=set())
            writer.add(new)
            self.detect_ids += writer.detect_ids
            self.report.new += len(new)

    def _replace(self, pk: int, rec: DocumentRecord, held: dict[str, int] | None) -> None:
        Mention.objects.filter(document_id=pk).delete()  # their offsets were into the old text (links go with them)
        state = Document.DetectionState.QUEUED if self.detect else Document.DetectionState.NONE
        Document.objects.filter(pk=pk).update(text=rec.text, title=rec.title, metadata=rec.metadata,
                                              detection_state=state, detected_at=None, detection_model="")
        if self.detect:
            self.detect_ids.append(pk)
        self.report.replaced += 1
        _name(self.report.replaced_ids, rec.external_id)
        if held:
            self._audit(actions.DOCUMENT_REPLACED, pk, rec.external_id, held)

    def _delete(self, pmids: tuple[str, ...]) -> None:
        existing = self._existing(pmids)
        curated = self._curated(pk for pk, _, _ in existing.values())
        doomed = []
        for pmid, (pk, _, _) in existing.items():
            if pk in curated and not self.force:
                self._keep(pmid)
                continue
            doomed.append(pk)
            self.report.deleted += 1
            _name(self.report.deleted_ids, pmid)
            if pk in curated:
                self._audit(actions.DOCUMENT_WITHDRAWN, pk, pmid, curated[pk])
        Document.objects.filter(pk__in=doomed).delete()  # mentions, links, decisions by cascade

    def _keep(self, pmid: str) -> None:
        self.report.kept_curated += 1
        _name(self.report.kept_ids, pmid)

    def _audit(self, action: str, pk: int, pmid: str, held: dict[str, int]) -> None:
        record(action, object_type="document", object_id=pk, label=f"PMID {pmid} in {self.collection.slug}",
               before=held, after={"file": Path(self.source).name})


def _name(names: list[str], pmid: str) -> None:
    if len(names) < _NAMED:
        names.append(pmid)


def _sum_up(report: PubmedReport, slug: str, seconds: float) -> None:
    if report.kept_curated:
        report.warnings.append(
            f"{report.kept_curated} documents with curators' decisions or gold annotations were kept as they were, though the file changes or "
            f"withdraws them (e.g. PMID {', '.join(report.kept_ids)}); import again with force to apply it"
        )
    if report.replaced:
        report.warnings.append(
            f"{report.replaced} documents' text changed and was replaced, their earlier mentions dropped "
            f"(e.g. PMID {', '.join(report.replaced_ids)})"
        )
    report.created = report.new > 0
    report.seconds = round(seconds, 3)
    resumed = f", continued after item {report.resumed_at:,}" if report.resumed_at else ""
    report.message = (
        f"PubMed: {report.new} new, {report.replaced} replaced, {report.unchanged} unchanged, {report.deleted} "
        f"deleted, {report.kept_curated} kept (curated) in {slug}{resumed}, in {report.seconds:.1f} s"
    )
