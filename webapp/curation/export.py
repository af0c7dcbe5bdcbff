"""Documents out of the database in the interchange formats (the choices of links and ids, and their checks, are
:mod:`webapp.corpus.formats.services`'s).

An export writes who decided each link and, on a project's documents, each span's adjudication
(:mod:`webapp.curation.provenance`): it reads curation's decisions and projects' adjudications, so it lives in
curation, the lowest layer that may read both (README, "Layers").
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from django.db.models import Q, QuerySet

from webapp.core.snapshot import in_snapshot
from webapp.corpus.formats import get_format
from webapp.corpus.formats.brat import safe_name
from webapp.corpus.formats.ids import IdSpeller
from webapp.corpus.formats.records import AdjudicationRecord, DocumentRecord, LinkRecord, MentionRecord
from webapp.corpus.formats.services import LINK_CHOICES, check_export_options, chosen_links
from webapp.corpus.models import Collection, Document, Mention
from webapp.curation.export_rows import Batch, LinkRow, MentionRow, read_batch
from webapp.curation.provenance import Provenance, provenance

__all__ = ["ExportFile", "ExportStream", "document_records", "export_documents", "stream_documents", "streams"]

EXPORT_BATCH = 200  # documents read together, with their provenance, on export
CHUNK_CHARS = 64 * 1024  # a streamed export's pieces: documents gathered to about this many characters


@dataclass(frozen=True)
class ExportFile:
    content: bytes
    content_type: str
    filename: str


@dataclass(frozen=True)
class ExportStream:
    """An export a piece at a time: ``chunks`` reads the documents a batch at a time, in one snapshot of the
    database (:func:`webapp.core.snapshot.in_snapshot`) opened at its first piece and ended at its last or when
    it is closed."""

    chunks: Iterator[bytes]
    content_type: str
    filename: str


def streams(fmt: str) -> bool:
    """Whether format ``fmt`` is written a document at a time (else whole: a zip)."""
    return get_format(fmt).stream is not None


def stream_documents(
    documents: QuerySet[Document],
    fmt: str,
    *,
    suggestions: bool = False,
    stem: str = "export",
    ids: str = "dictionary",
    links: str = "decided",
) -> ExportStream:
    """The documents in format ``fmt``, one of those :func:`streams` says, as pieces of the file; the options are
    :func:`export_documents`' (refused here, before the first piece, where they do not fit)."""
    check_export_options(fmt, ids, links)
    spec = get_format(fmt)
    write = spec.stream
    if write is None:
        raise ValueError(f"{spec.label} is written whole, not streamed")

    def chunks() -> Iterator[bytes]:
        pending: list[str] = []
        size = 0
        for text in write(document_records(documents, suggestions=suggestions, ids=ids, links=links)):
            pending.append(text)
            size += len(text)
            if size >= CHUNK_CHARS:
                yield "".join(pending).encode("utf-8")
                pending, size = [], 0
        if pending:
            yield "".join(pending).encode("utf-8")

    return ExportStream(in_snapshot(chunks), spec.content_type, f"{safe_name(stem)}.{spec.extension}")


def export_documents(
    documents: QuerySet[Document],
    fmt: str,
    *,
    suggestions: bool = False,
    stem: str = "export",
    ids: str = "dictionary",
    links: str = "decided",
) -> ExportFile:
    """The documents in format ``fmt`` (see :data:`webapp.corpus.formats.FORMATS`) as one file; ``ids`` and
    ``links`` as :func:`document_records` says (refused by :func:`check_export_options` where they do not fit)."""
    if streams(fmt):  # one path: the whole file is the stream's pieces joined
        stream = stream_documents(documents, fmt, suggestions=suggestions, stem=stem, ids=ids, links=links)
        return ExportFile(b"".join(stream.chunks), stream.content_type, stream.filename)
    check_export_options(fmt, ids, links)
    spec = get_format(fmt)
    content = spec.write(document_records(documents, suggestions=suggestions, ids=ids, links=links))
    data = content.encode("utf-8") if isinstance(content, str) else content
    return ExportFile(data, spec.content_type, f"{safe_name(stem)}.{spec.extension}")


def document_records(
    documents: QuerySet[Document],
    *,
    suggestions: bool = False,
    ids: str = "dictionary",
    links: str = "decided",
) -> Iterator[DocumentRecord]:
    """Records of the documents, with who decided each link and, on a project's documents, each span's
    adjudication (:mod:`webapp.curation.provenance`), read a batch of documents at a time. ``links``: which
    links (:data:`LINK_CHOICES`); ``ids``: the form of every id (:mod:`webapp.corpus.formats.ids`).

    Only the documents of ``documents`` are read: an export never widens to other collections, so an
    annotator's workspace (``Collection.is_workspace``) is in a file only when its own documents were asked for.
    """
    if links not in LINK_CHOICES:
        raise ValueError(f"unknown choice of links {links!r}; expected one of {', '.join(LINK_CHOICES)}")
    export = _Export(IdSpeller(ids), links, suggestions)
    chosen_mentions = _mentions_of(links)
    after: int | None = None
    while True:
        # Keyset pagination by pk (not OFFSET: each batch is found by the index, however far into the collection).
        batch = read_batch(documents, chosen_mentions, after, EXPORT_BATCH)
        yield from export.records(batch)
        if len(batch.documents) < EXPORT_BATCH:
            return
        after = batch.documents[-1].pk


def _mentions_of(links: str) -> Q:
    """The mentions an export writes: the gold standard's whatever their status (``gold``: those alone), the rest
    unless a curator rejected them."""
    gold, rejected = Q(source=Mention.Source.GOLD), Q(status=Mention.Status.REJECTED)
    if links == "gold":
        return gold
    if links == "all":
        return gold | ~rejected
    return ~rejected


class _Export:
    """One export's choices, and what it has read of the collections its documents are in."""

    def __init__(self, speller: IdSpeller, links: str, suggestions: bool) -> None:
        self.speller = speller
        self.links = links
        self.suggestions = suggestions
        self.collections: dict[int, Collection] = {}

    def records(self, batch: Batch) -> Iterator[DocumentRecord]:
        documents = batch.documents
        missing = {d.collection_id for d in documents} - set(self.collections)
        if missing:
            self.collections.update(Collection.objects.select_related("dictionary").in_bulk(list(missing)))
        chosen = {
            mention.pk: chosen_links(batch.links.get(mention.pk, ()), self.links, self.suggestions)  # type: ignore[arg-type]
            for d in documents
            for mention in batch.mentions.get(d.pk, ())
        }
        where = {m.pk: self.collections.get(d.collection_id) for d in documents for m in batch.mentions.get(d.pk, ())}
        self.speller.prepare((link, where[pk]) for pk, links in chosen.items() for link in links)
        known = provenance(documents, [link for links in chosen.values() for link in links])  # type: ignore[arg-type]
        for document in documents:
            collection = self.collections.get(document.collection_id)
            yield DocumentRecord(
                external_id=document.external_id,
                text=document.text,
                title=document.title,
                mentions=[
                    _mention_record(
                        m,
                        [(link, self.speller.concept_id(link, collection)) for link in chosen[m.pk]],
                        self._adjudication(known.adjudication(m), collection),  # type: ignore[arg-type]
                        known,
                    )
                    for m in batch.mentions.get(document.pk, ())
                ],
                metadata=document.metadata or {},
            )

    def _adjudication(
        self, record: AdjudicationRecord | None, collection: Collection | None
    ) -> AdjudicationRecord | None:
        """The annotators' labels in the export's id form, as its links are."""
        if record is None or not record.annotator_labels:
            return record
        labels = {
            who: self.speller.label(label, collection) for who, label in record.annotator_labels.items()
        }
        return replace(record, annotator_labels=labels)


def _mention_record(
    mention: MentionRow,
    links: Sequence[tuple[LinkRow, str]],
    adjudication: AdjudicationRecord | None,
    known: Provenance,
) -> MentionRecord:
    return MentionRecord(
        start=mention.start,
        end=mention.end,
        text=mention.text,
        mention_type=mention.mention_type,
        links=tuple(_link_record(link, concept_id, known) for link, concept_id in links),
        part_texts=tuple(mention.part_texts),
        status=mention.status,
        adjudication=adjudication,
    )


def _link_record(link: LinkRow, concept_id: str, known: Provenance) -> LinkRecord:
    decided_by, decided_at, decided_via = known.decided_by(link)  # type: ignore[arg-type]
    return LinkRecord(
        part=link.part,
        concept_id="" if link.nil else concept_id,
        nil=link.nil,
        origin=link.origin,
        score=link.score,
        model_version=link.model_version,
        decided_by=decided_by,
        decided_at=decided_at,
        decided_via=decided_via,
    )
