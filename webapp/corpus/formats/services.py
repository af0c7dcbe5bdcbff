"""Documents in and out of the database in the interchange formats.

Export writes, for each mention, the links ``links`` asks for (:data:`LINK_CHOICES`): by default (``decided``) one
link per composite part, the latest curator decision for the part, else the gold link; ``gold`` the gold standard as
imported (the gold mentions and their gold links, whatever curators decided since); ``curator`` the curators'
decisions alone; ``all`` the gold link and the latest curator decision of each part both, each with its origin and
provenance (JSONL, BioC: a format with no place to say who made a link, PubTator or brat, refuses it). With
``suggestions``, a part with no such link gets the best-ranked model suggestion. Every id of one export is in one
form (:mod:`webapp.corpus.formats.ids`): the dictionary's by default, the source file's with ``ids="source"``.
JSONL and BioC also write who decided each link, when and how, and the adjudication state of a project's spans
(:mod:`webapp.corpus.formats.provenance`); PubTator and brat have no place for them and stay as they were.

Import reads the whole file first (a malformed file names the file and the line or element and touches
nothing), then writes through :func:`webapp.corpus.writer.write_documents`, the writer PubTator files
(:func:`webapp.corpus.importers.import_pubtator`, streamed) go through too: one transaction, documents
already in the collection skipped with a warning, gold ids resolved to concepts of the dictionary's latest
version when possible and always kept as written.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db.models import Prefetch, Q, QuerySet

from webapp.core.inputs import check_label, input_path
from webapp.corpus.formats import get_format
from webapp.corpus.formats.brat import safe_name
from webapp.corpus.formats.ids import ID_FORMS, IdSpeller, check_id_form
from webapp.corpus.formats.provenance import Provenance, provenance
from webapp.corpus.formats.records import AdjudicationRecord, DocumentRecord, LinkRecord, MentionRecord
from webapp.corpus.importers import COLLECTION_TITLE_MAX, import_pubtator
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.corpus.writer import DuplicateDocument, ImportReport, Progress, write_documents

__all__ = [
    "ExportFile",
    "DuplicateDocument",
    "ID_FORMS",
    "LINK_CHOICES",
    "check_export_options",
    "document_records",
    "export_documents",
    "import_documents",
    "import_records",
]

RECORD_BATCH = 500
EXPORT_BATCH = 200  # documents read together, with their provenance, on export
_ORIGIN_ORDER = {Link.Origin.CURATOR: 0, Link.Origin.GOLD: 1, Link.Origin.MODEL: 2}

# Which links an export writes (see the module's docstring); the first is the default.
LINK_CHOICES = {
    "decided": "the latest curator decision of each part, else its gold link",
    "gold": "the gold standard as imported: gold mentions with their gold links, whatever curators decided since",
    "curator": "curator decisions only",
    "all": "gold links and curator decisions both, each with its origin (JSONL and BioC only)",
}
# Formats that can say who made each link, so that a part's gold and curator links can stand side by side.
_PROVENANCE_FORMATS = ("jsonl", "bioc-xml", "bioc-json", "text")


# --- export -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExportFile:
    content: bytes
    content_type: str
    filename: str


def check_export_options(fmt: str, ids: str, links: str) -> None:
    """Refuse, naming the option, an id form or a choice of links that is unknown or that the format cannot write."""
    get_format(fmt)
    check_id_form(ids)
    if links not in LINK_CHOICES:
        raise ValueError(f"unknown choice of links {links!r}; expected one of {', '.join(LINK_CHOICES)}")
    if links == "all" and fmt not in _PROVENANCE_FORMATS:
        raise ValueError(
            f"links=all writes a part's gold link and curator decision side by side, and {get_format(fmt).label} has "
            "no place to say which is which: export links=gold and links=curator as two files, or use JSONL or BioC"
        )


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
    check_export_options(fmt, ids, links)
    spec = get_format(fmt)
    content = spec.write(document_records(documents, suggestions=suggestions, ids=ids, links=links))
    data = content.encode("utf-8") if isinstance(content, str) else content
    return ExportFile(data, spec.content_type, f"{safe_name(stem)}.{spec.extension}")


def document_records(
    documents: QuerySet[Document], *, suggestions: bool = False, ids: str = "dictionary", links: str = "decided"
) -> Iterator[DocumentRecord]:
    """Records of the documents, with who decided each link and, on a project's documents, each span's
    adjudication (:mod:`webapp.corpus.formats.provenance`), read a batch of documents at a time. ``links``: which
    links (:data:`LINK_CHOICES`); ``ids``: the form of every id (:mod:`webapp.corpus.formats.ids`).

    Only the documents of ``documents`` are read: an export never widens to other collections, so an
    annotator's workspace (``Collection.is_workspace``) is in a file only when its own documents were asked for.
    """
    if links not in LINK_CHOICES:
        raise ValueError(f"unknown choice of links {links!r}; expected one of {', '.join(LINK_CHOICES)}")
    export = _Export(IdSpeller(ids), links, suggestions)
    link_rows = Link.objects.select_related("concept", "created_by").order_by("part", "created_at", "id")
    mentions = (
        Mention.objects.filter(_mentions_of(links))
        .order_by("start", "end", "id")
        .prefetch_related(Prefetch("links", queryset=link_rows))
    )
    query = documents.order_by("id").prefetch_related(Prefetch("mentions", queryset=mentions))
    batch: list[Document] = []
    for document in query.iterator(chunk_size=EXPORT_BATCH):
        batch.append(document)
        if len(batch) == EXPORT_BATCH:
            yield from export.records(batch)
            batch = []
    if batch:
        yield from export.records(batch)


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

    def records(self, documents: list[Document]) -> Iterator[DocumentRecord]:
        missing = {d.collection_id for d in documents} - set(self.collections)
        self.collections.update(Collection.objects.select_related("dictionary").in_bulk(list(missing)))
        chosen = {
            mention.pk: chosen_links(list(mention.links.all()), self.links, self.suggestions)
            for d in documents
            for mention in d.mentions.all()
        }
        where = {m.pk: self.collections.get(d.collection_id) for d in documents for m in d.mentions.all()}
        self.speller.prepare((link, where[pk]) for pk, links in chosen.items() for link in links)
        known = provenance(documents, [link for links in chosen.values() for link in links])
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
                        self._adjudication(known.adjudication(m), collection),
                        known,
                    )
                    for m in document.mentions.all()
                ],
                metadata=document.metadata or {},
            )


    def _adjudication(self, record: AdjudicationRecord | None, collection: Collection | None) -> AdjudicationRecord | None:
        """The annotators' labels in the export's id form, as its links are."""
        if record is None or not record.annotator_labels:
            return record
        labels = {who: self.speller.label(label, collection) for who, label in record.annotator_labels.items()}
        return replace(record, annotator_labels=labels)


def _mention_record(
    mention: Mention, links: Sequence[tuple[Link, str]], adjudication: AdjudicationRecord | None, known: Provenance
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


def chosen_links(links: Sequence[Link], choice: str, suggestions: bool) -> tuple[Link, ...]:
    """A mention's links an export writes (``choice``: see :data:`LINK_CHOICES`), in part order; with
    ``suggestions``, the best model suggestion of each part that has none of them."""
    if choice == "decided":
        return effective_links(links, suggestions)
    origins = {"gold": (Link.Origin.GOLD,), "curator": (Link.Origin.CURATOR,)}.get(
        choice, (Link.Origin.GOLD, Link.Origin.CURATOR)
    )
    kept = [effective_links([link for link in links if link.origin == origin], False) for origin in origins]
    out = [link for chosen in kept for link in chosen]
    if suggestions:
        covered = {link.part for link in out}
        out += [s for s in effective_links([link for link in links if link.origin == Link.Origin.MODEL], True)
                if s.part not in covered]
    # Gold before the curator's decision within a part: the order of the origins asked for.
    return tuple(sorted(out, key=lambda link: (link.part, link.origin != Link.Origin.GOLD)))


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


def _link_record(link: Link, concept_id: str, known: Provenance) -> LinkRecord:
    decided_by, decided_at, decided_via = known.decided_by(link)
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
