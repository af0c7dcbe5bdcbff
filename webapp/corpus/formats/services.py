"""Documents in and out of the database in the interchange formats.

Export writes, for each mention, the links ``links`` asks for (:data:`LINK_CHOICES`): by default (``decided``) one
link per composite part, the latest curator decision for the part, else the gold link; ``gold`` the gold standard as
imported (the gold mentions and their gold links, whatever curators decided since); ``curator`` the curators'
decisions alone; ``all`` the gold link and the latest curator decision of each part both, each with its origin and
provenance (JSONL, BioC: a format with no place to say who made a link, PubTator or brat, refuses it). With
``suggestions``, a part with no such link gets the best-ranked model suggestion. Every id of one export is in one
form (:mod:`webapp.corpus.formats.ids`): the dictionary's by default, the source file's with ``ids="source"``.
JSONL and BioC also write who decided each link, when and how, and the adjudication state of a project's spans;
PubTator and brat have no place for them and stay as they were. The export itself, which reads curation's decisions
and projects' adjudications, is :mod:`webapp.curation.export` (README, "Layers"); here are its choices and checks.

Import of BioC XML and JSON, JSON Lines, PubAnnotation and PubMed XML streams the file and commits a batch of
documents at a time, resumable (:mod:`webapp.corpus.batch_import`): a malformed document names the file and the
document, the batches before it committed. The other formats are read whole first (a malformed file names the
file and the line or element and touches nothing), then written through :func:`webapp.corpus.writer.write_documents`, the writer PubTator files
(:func:`webapp.corpus.importers.import_pubtator`, streamed) go through too: one transaction, documents
already in the collection skipped with a warning, gold ids resolved to concepts of the dictionary's latest
version when possible and always kept as written.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.validators import validate_slug

from webapp.core.inputs import check_label, input_path
from webapp.corpus.formats import get_format
from webapp.corpus.formats.ids import ID_FORMS, check_id_form
from webapp.corpus.formats.records import DocumentRecord
from webapp.corpus.importers import COLLECTION_TITLE_MAX, import_pubtator
from webapp.corpus.models import Collection, Link
from webapp.corpus.pubmed_import import import_pubmed
from webapp.corpus.streamed_import import STREAMED, import_streamed
from webapp.corpus.writer import DuplicateDocument, ImportReport, Progress, write_documents

__all__ = [
    "DuplicateDocument",
    "ID_FORMS",
    "LINK_CHOICES",
    "check_export_options",
    "chosen_links",
    "effective_links",
    "import_documents",
    "import_records",
]

RECORD_BATCH = 500
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


# --- import -------------------------------------------------------------------------------------------


def import_documents(
    path: str | Path,
    fmt: str,
    *,
    collection_slug: str,
    title: str | None = None,
    dictionary_slug: str | None = None,
    progress: Progress | None = None,
    job_id: int | None = None,
    force: bool = False,
) -> ImportReport:
    """Import a file of format ``fmt`` into ``collection_slug`` (created if new), in one transaction; PubMed XML,
    BioC XML and JSON, JSON Lines and PubAnnotation streamed in a transaction per batch, resumable through
    ``job_id``, ``force`` letting an update change or delete documents curators decided on
    (:mod:`webapp.corpus.batch_import`).

    ``progress`` is called with (documents written, total) as the import goes. Raises :class:`FormatError` /
    :class:`linker.data.ParseError` (file and line or element) for a malformed file, ``FileNotFoundError``
    and ``ValueError`` for bad arguments; nothing is written then.
    """
    spec = get_format(fmt)
    path = input_path(path, folder=True)  # brat: a folder of .txt and .ann files will do
    _check_slug(collection_slug)
    check_label(title, "collection title", COLLECTION_TITLE_MAX)
    dictionary_slug = dictionary_slug or _collection_dictionary(collection_slug)
    if spec.name == "pubmed-xml":
        return import_pubmed(path, collection_slug=collection_slug, title=title, dictionary_slug=dictionary_slug,
                             progress=progress, job_id=job_id, force=force)
    if spec.name in STREAMED:
        return import_streamed(path, spec.name, collection_slug=collection_slug, title=title,
                               dictionary_slug=dictionary_slug, progress=progress, job_id=job_id, force=force)
    if force:
        raise ValueError("force applies to PubMed XML, BioC, JSON Lines and PubAnnotation imports only")
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
