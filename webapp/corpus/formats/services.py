"""Documents in and out of the database in the interchange formats.

Export writes, for each mention that is not rejected, one link per composite part: the latest curator
decision for the part, else the gold link, else (only when ``suggestions`` is asked for) the best-ranked
model suggestion. Ids are written as the source wrote them (``Link.concept_ref``), so an imported file comes
back with its own ids; curator links carry the concept's primary id there. JSONL and BioC also write who
decided each link, when and how, and the adjudication state of a project's spans
(:mod:`webapp.corpus.formats.provenance`); PubTator and brat have no place for them and stay as they were.

Import reads the whole file first (a malformed file names the file and the line or element and touches
nothing), then writes through :func:`webapp.corpus.writer.write_documents`, the writer PubTator files
(:func:`webapp.corpus.importers.import_pubtator`, streamed) go through too: one transaction, documents
already in the collection skipped with a warning, gold ids resolved to concepts of the dictionary's latest
version when possible and always kept as written.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db.models import Prefetch, QuerySet

from webapp.core.inputs import check_label, input_path
from webapp.corpus.formats import get_format
from webapp.corpus.formats.brat import safe_name
from webapp.corpus.formats.provenance import Provenance, provenance
from webapp.corpus.formats.records import DocumentRecord, LinkRecord, MentionRecord
from webapp.corpus.importers import COLLECTION_TITLE_MAX, import_pubtator
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.corpus.writer import DuplicateDocument, ImportReport, Progress, write_documents

__all__ = [
    "ExportFile",
    "DuplicateDocument",
    "document_records",
    "export_documents",
    "import_documents",
    "import_records",
]

RECORD_BATCH = 500
EXPORT_BATCH = 200  # documents read together, with their provenance, on export
_ORIGIN_ORDER = {Link.Origin.CURATOR: 0, Link.Origin.GOLD: 1, Link.Origin.MODEL: 2}


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
    """Records of the documents, with who decided each link and, on a project's documents, each span's
    adjudication (:mod:`webapp.corpus.formats.provenance`), read a batch of documents at a time.

    Only the documents of ``documents`` are read: an export never widens to other collections, so an
    annotator's workspace (``Collection.is_workspace``) is in a file only when its own documents were asked for.
    """
    links = Link.objects.select_related("concept", "created_by").order_by("part", "created_at", "id")
    mentions = (
        Mention.objects.exclude(status=Mention.Status.REJECTED)
        .order_by("start", "end", "id")
        .prefetch_related(Prefetch("links", queryset=links))
    )
    query = documents.order_by("id").prefetch_related(Prefetch("mentions", queryset=mentions))
    batch: list[Document] = []
    for document in query.iterator(chunk_size=EXPORT_BATCH):
        batch.append(document)
        if len(batch) == EXPORT_BATCH:
            yield from _batch_records(batch, suggestions)
            batch = []
    if batch:
        yield from _batch_records(batch, suggestions)


def _batch_records(documents: list[Document], suggestions: bool) -> Iterator[DocumentRecord]:
    chosen = {
        mention.pk: effective_links(list(mention.links.all()), suggestions) for d in documents for mention in d.mentions.all()
    }
    known = provenance(documents, [link for links in chosen.values() for link in links])
    for document in documents:
        yield DocumentRecord(
            external_id=document.external_id,
            text=document.text,
            title=document.title,
            mentions=[_mention_record(m, chosen[m.pk], known) for m in document.mentions.all()],
            metadata=document.metadata or {},
        )


def _mention_record(mention: Mention, links: Sequence[Link], known: Provenance) -> MentionRecord:
    return MentionRecord(
        start=mention.start,
        end=mention.end,
        text=mention.text,
        mention_type=mention.mention_type,
        links=tuple(_link_record(link, known) for link in links),
        part_texts=tuple(mention.part_texts),
        status=mention.status,
        adjudication=known.adjudication(mention),
    )


def effective_links(links: Sequence[Link], suggestions: bool) -> tuple[Link, ...]:
    """One link per part: the latest curator decision, else gold, else the best suggestion (if asked)."""
    best: dict[int, Link] = {}
    for link in links:
        if link.origin == Link.Origin.MODEL and not suggestions:
            continue
        current = best.get(link.part)
        if current is None or _better(link, current):
            best[link.part] = link
    return tuple(best[part] for part in sorted(best))


def _better(link: Link, current: Link) -> bool:
    a, b = _ORIGIN_ORDER[Link.Origin(link.origin)], _ORIGIN_ORDER[Link.Origin(current.origin)]
    if a != b:
        return a < b
    if link.origin == Link.Origin.MODEL:
        return (link.rank if link.rank is not None else 1 << 15) < (current.rank if current.rank is not None else 1 << 15)
    return (link.created_at, link.pk) > (current.created_at, current.pk)  # the latest decision wins


def _link_record(link: Link, known: Provenance) -> LinkRecord:
    concept_id = "" if link.nil else (link.concept_ref or (link.concept.concept_id if link.concept else ""))
    decided_by, decided_at, decided_via = known.decided_by(link)
    return LinkRecord(
        part=link.part,
        concept_id=concept_id,
        nil=link.nil,
        origin=link.origin,
        score=link.score,
        model_version=link.model_version,
        decided_by=decided_by,
        decided_at=decided_at,
        decided_via=decided_via,
    )


# --- import -------------------------------------------------------------------------------------------


def import_documents(
    path: str | Path,
    fmt: str,
    *,
    collection_slug: str,
    title: str | None = None,
    dictionary_slug: str | None = None,
    progress: Progress | None = None,
) -> ImportReport:
    """Import a file of format ``fmt`` into ``collection_slug`` (created if new), in one transaction.

    ``progress`` is called with (documents written, total) as the import goes. Raises :class:`FormatError` /
    :class:`linker.data.ParseError` (file and line or element) for a malformed file, ``FileNotFoundError``
    and ``ValueError`` for bad arguments; nothing is written then.
    """
    spec = get_format(fmt)
    path = input_path(path, folder=True)  # brat: a folder of .txt and .ann files will do
    _check_slug(collection_slug)
    check_label(title, "collection title", COLLECTION_TITLE_MAX)
    dictionary_slug = dictionary_slug or _collection_dictionary(collection_slug)
    if spec.name == "pubtator":
        return import_pubtator(path, collection_slug=collection_slug, title=title, dictionary_slug=dictionary_slug, progress=progress)
    records = list(spec.read(path))  # the whole file first: a malformed one is refused before any write
    return import_records(
        records, source=str(path), collection_slug=collection_slug, title=title, dictionary_slug=dictionary_slug, progress=progress
    )


def import_records(
    records: Sequence[DocumentRecord],
    *,
    source: str,
    collection_slug: str,
    title: str | None = None,
    dictionary_slug: str | None = None,
    skip_existing: bool = True,
    progress: Progress | None = None,
) -> ImportReport:
    """Write records as documents, mentions and gold links; ``source`` names the file in errors."""
    _check_slug(collection_slug)
    check_label(title, "collection title", COLLECTION_TITLE_MAX)
    batches = (records[i : i + RECORD_BATCH] for i in range(0, len(records), RECORD_BATCH))
    return write_documents(
        batches,
        source=source,
        collection_slug=collection_slug,
        title=title,
        dictionary_slug=dictionary_slug,
        skip_existing=skip_existing,
        progress=progress,
        total=len(records),
    )


def _check_slug(slug: str) -> None:
    try:
        validate_slug(slug)
    except ValidationError:
        raise ValueError(f"collection slug {slug!r} must be letters, digits, '-' or '_'") from None
    if len(slug) > 64:
        raise ValueError(f"collection slug {slug!r} is longer than 64 characters")


def _collection_dictionary(slug: str) -> str | None:
    return Collection.objects.filter(slug=slug).values_list("dictionary__slug", flat=True).first()
