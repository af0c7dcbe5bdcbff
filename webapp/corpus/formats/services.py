"""Documents in and out of the database in the interchange formats.

Export writes, for each mention that is not rejected, one link per composite part: the latest curator
decision for the part, else the gold link, else (only when ``suggestions`` is asked for) the best-ranked
model suggestion. Ids are written as the source wrote them (``Link.concept_ref``), so an imported file comes
back with its own ids; curator links carry the concept's primary id there.

Import reads the whole file first (a malformed file names the file and the line or element and touches
nothing), then writes in one transaction. As for :func:`webapp.corpus.importers.import_pubtator` (which
PubTator files go through), documents already in the collection are skipped with a warning, gold ids are
resolved to concepts of the dictionary's latest version when possible and always kept as written.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import DatabaseError, transaction
from django.db.models import Prefetch, QuerySet

from webapp.corpus.formats import get_format
from webapp.corpus.formats.brat import safe_name
from webapp.corpus.formats.records import DocumentRecord, FormatError, LinkRecord, MentionRecord
from webapp.corpus.importers import (
    ConceptResolver,
    ImportReport,
    dictionary_version_for,
    import_pubtator,
    locked_collection,
)
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.vocab.importers import max_length

__all__ = [
    "ExportFile",
    "DuplicateDocument",
    "document_records",
    "export_documents",
    "import_documents",
    "import_records",
]

_EXTERNAL_ID_MAX = max_length(Document, "external_id")
_TYPE_MAX = max_length(Mention, "mention_type")
_REF_MAX = max_length(Link, "concept_ref")
_ORIGIN_ORDER = {Link.Origin.CURATOR: 0, Link.Origin.GOLD: 1, Link.Origin.MODEL: 2}


class DuplicateDocument(ValueError):
    """A document id that the collection already has, where skipping it is not wanted."""


# --- export -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExportFile:
    content: bytes
    content_type: str
    filename: str


def export_documents(
    documents: QuerySet[Document], fmt: str, *, suggestions: bool = False, stem: str = "export"
) -> ExportFile:
    """The documents in format ``fmt`` (see :data:`webapp.corpus.formats.FORMATS`) as one file."""
    spec = get_format(fmt)
    content = spec.write(document_records(documents, suggestions=suggestions))
    data = content.encode("utf-8") if isinstance(content, str) else content
    return ExportFile(data, spec.content_type, f"{safe_name(stem)}.{spec.extension}")


def document_records(documents: QuerySet[Document], *, suggestions: bool = False) -> Iterator[DocumentRecord]:
    links = Link.objects.select_related("concept").order_by("part", "created_at", "id")
    mentions = (
        Mention.objects.exclude(status=Mention.Status.REJECTED)
        .order_by("start", "end", "id")
        .prefetch_related(Prefetch("links", queryset=links))
    )
    query = documents.order_by("id").prefetch_related(Prefetch("mentions", queryset=mentions))
    for document in query.iterator(chunk_size=200):
        yield DocumentRecord(
            external_id=document.external_id,
            text=document.text,
            title=document.title,
            mentions=[_mention_record(m, suggestions) for m in document.mentions.all()],
            metadata=document.metadata or {},
        )


def _mention_record(mention: Mention, suggestions: bool) -> MentionRecord:
    return MentionRecord(
        start=mention.start,
        end=mention.end,
        text=mention.text,
        mention_type=mention.mention_type,
        links=effective_links(list(mention.links.all()), suggestions),
        part_texts=tuple(mention.part_texts),
        status=mention.status,
    )


def effective_links(links: Sequence[Link], suggestions: bool) -> tuple[LinkRecord, ...]:
    """One link per part: the latest curator decision, else gold, else the best suggestion (if asked)."""
    best: dict[int, Link] = {}
    for link in links:
        if link.origin == Link.Origin.MODEL and not suggestions:
            continue
        current = best.get(link.part)
        if current is None or _better(link, current):
            best[link.part] = link
    return tuple(_link_record(best[part]) for part in sorted(best))


def _better(link: Link, current: Link) -> bool:
    a, b = _ORIGIN_ORDER[Link.Origin(link.origin)], _ORIGIN_ORDER[Link.Origin(current.origin)]
    if a != b:
        return a < b
    if link.origin == Link.Origin.MODEL:
        return (link.rank if link.rank is not None else 1 << 15) < (current.rank if current.rank is not None else 1 << 15)
    return (link.created_at, link.pk) > (current.created_at, current.pk)  # the latest decision wins


def _link_record(link: Link) -> LinkRecord:
    concept_id = "" if link.nil else (link.concept_ref or (link.concept.concept_id if link.concept else ""))
    return LinkRecord(
        part=link.part,
        concept_id=concept_id,
        nil=link.nil,
        origin=link.origin,
        score=link.score,
        model_version=link.model_version,
    )


# --- import -------------------------------------------------------------------------------------------


def import_documents(
    path: str | Path,
    fmt: str,
    *,
    collection_slug: str,
    title: str | None = None,
    dictionary_slug: str | None = None,
) -> ImportReport:
    """Import a file of format ``fmt`` into ``collection_slug`` (created if new), in one transaction.

    Raises :class:`FormatError` / :class:`linker.data.ParseError` (file and line or element) for a
    malformed file, ``FileNotFoundError`` and ``ValueError`` for bad arguments; nothing is written then.
    """
    spec = get_format(fmt)
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    _check_slug(collection_slug)
    dictionary_slug = dictionary_slug or _collection_dictionary(collection_slug)
    if spec.name == "pubtator":
        return import_pubtator(path, collection_slug=collection_slug, title=title, dictionary_slug=dictionary_slug)
    records = list(spec.read(path))
    return import_records(records, source=str(path), collection_slug=collection_slug, title=title, dictionary_slug=dictionary_slug)


def import_records(
    records: Sequence[DocumentRecord],
    *,
    source: str,
    collection_slug: str,
    title: str | None = None,
    dictionary_slug: str | None = None,
    skip_existing: bool = True,
) -> ImportReport:
    """Write records as documents, mentions and gold links; ``source`` names the file in errors."""
    started = time.perf_counter()
    _check_slug(collection_slug)
    dictionary, version = dictionary_version_for(dictionary_slug)
    resolver = ConceptResolver.for_version(version) if version else None
    for record in records:
        _validate(source, record)
    with transaction.atomic():
        collection = locked_collection(collection_slug, title, dictionary)
        report = ImportReport(collection_id=collection.pk, dictionary_version_id=version.pk if version else None)
        existing = set(collection.documents.values_list("external_id", flat=True))
        fresh: list[DocumentRecord] = []
        for record in records:
            if record.external_id in existing:
                if not skip_existing:
                    raise DuplicateDocument(f"collection {collection.slug} already has a document {record.external_id!r}")
                report.skipped_documents += 1
                continue
            existing.add(record.external_id)
            fresh.append(record)
        try:
            _write(collection, fresh, resolver, report)
        except DatabaseError as exc:
            raise FormatError(source, "", f"the database refused the file's documents: {exc}") from exc
        if report.skipped_documents:
            report.warnings.append(f"{report.skipped_documents} documents already in collection {collection.slug} were skipped, not updated")
        if report.links and not collection.has_gold:
            collection.has_gold = True
            collection.save(update_fields=["has_gold"])
    report.created = report.documents > 0
    report.seconds = round(time.perf_counter() - started, 3)
    report.message = (
        f"imported {report.documents} documents ({report.skipped_documents} already there), {report.mentions} mentions, "
        f"{report.links} gold links ({report.resolved_links} resolved, {report.unresolved_links} unresolved, "
        f"{report.nil_links} NIL) into {collection.slug} in {report.seconds:.1f} s"
    )
    return report


def _validate(source: str, record: DocumentRecord) -> None:
    where = record.where or f"document {record.external_id}"
    if not record.external_id or len(record.external_id) > _EXTERNAL_ID_MAX:
        raise FormatError(source, where, f"a document id must have 1 to {_EXTERNAL_ID_MAX} characters")
    if "\x00" in record.text:
        raise FormatError(source, where, "the text contains a NUL character, which PostgreSQL cannot store")
    for m in record.mentions:
        m_where = m.where or where
        if not 0 <= m.start < m.end <= len(record.text):
            raise FormatError(source, m_where, f"span {m.start}-{m.end} outside the document text (length {len(record.text)})")
        if len(m.mention_type) > _TYPE_MAX:
            raise FormatError(source, m_where, f"mention type {m.mention_type[:40]!r} is longer than {_TYPE_MAX}")
        parts = [link.part for link in m.links]
        if len(parts) != len(set(parts)):
            raise FormatError(source, m_where, "a composite part is linked twice")
        too_long = [link.concept_id for link in m.links if len(link.concept_id) > _REF_MAX]
        if too_long:
            raise FormatError(source, m_where, f"id {too_long[0][:40]!r}... is longer than {_REF_MAX}")


def _write(collection: Collection, records: list[DocumentRecord], resolver: ConceptResolver | None, report: ImportReport) -> None:
    documents = Document.objects.bulk_create(
        [
            Document(collection=collection, external_id=r.external_id, title=r.title, text=r.text, metadata=r.metadata)
            for r in records
        ],
        batch_size=500,
    )
    mentions: list[Mention] = []
    wanted: list[MentionRecord] = []
    for record, document in zip(records, documents, strict=True):
        seen: set[tuple[int, int, str]] = set()
        for m in record.mentions:
            key = (m.start, m.end, m.mention_type)
            if key in seen:
                report.warnings.append(f"document {record.external_id} annotates {m.start}-{m.end} {m.mention_type} twice; the repeat was left out")
                continue
            seen.add(key)
            mentions.append(
                Mention(
                    document=document,
                    start=m.start,
                    end=m.end,
                    text=record.text[m.start : m.end],
                    mention_type=m.mention_type,
                    status=Mention.Status.PENDING,
                    source=Mention.Source.GOLD,
                    part_texts=list(m.part_texts),
                )
            )
            wanted.append(m)
    Mention.objects.bulk_create(mentions, batch_size=2000)
    links = [_gold_link(mention, link, resolver, report) for mention, m in zip(mentions, wanted, strict=True) for link in m.links]
    Link.objects.bulk_create(links, batch_size=2000)
    report.documents += len(documents)
    report.mentions += len(mentions)
    report.links += len(links)


def _gold_link(mention: Mention, record: LinkRecord, resolver: ConceptResolver | None, report: ImportReport) -> Link:
    if record.nil or not record.concept_id:
        report.nil_links += 1
        return Link(mention=mention, part=record.part, nil=True, concept_ref="", origin=Link.Origin.GOLD)
    single = "+" not in record.concept_id
    concept = resolver.resolve(record.concept_id) if resolver and single else None
    if concept is None:
        report.unresolved_links += 1
    else:
        report.resolved_links += 1
    return Link(mention=mention, part=record.part, concept_id=concept, concept_ref=record.concept_id, origin=Link.Origin.GOLD)


def _check_slug(slug: str) -> None:
    try:
        validate_slug(slug)
    except ValidationError:
        raise ValueError(f"collection slug {slug!r} must be letters, digits, '-' or '_'") from None
    if len(slug) > 64:
        raise ValueError(f"collection slug {slug!r} is longer than 64 characters")


def _collection_dictionary(slug: str) -> str | None:
    return Collection.objects.filter(slug=slug).values_list("dictionary__slug", flat=True).first()

