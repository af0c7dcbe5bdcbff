"""Import a PubTator file (documents with gold mentions) into a collection, resolving gold ids to concepts.

The file is streamed through :func:`linker.data.iter_pubtator` and written by
:func:`webapp.corpus.writer.write_documents`, the writer every format shares (one transaction per file,
documents already in the collection skipped, errors naming the file and the line). What is PubTator's own:

- A PMID repeated inside one file (the NCBI Disease training set repeats 8528200, and its published count
  of 5,145 mentions includes both copies) is kept as its own document ``8528200#2`` with
  ``metadata["repeat_of"]``, so the corpus counts match the literature and nothing is silently dropped. The
  writer numbers the repeats, as it does for every format, so records go to it under the file's own PMIDs.
- A UTF-8 byte-order mark at the start of the file (Windows editors write one) is skipped.
- Each document records where it came from (``metadata["source"]`` and ``["line"]``) and the file's
  relation lines (``metadata["relations"]``).
- A mention without an id, or with ``-1``, gets one NIL gold link.
"""

from __future__ import annotations

import zlib
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.validators import validate_slug

from linker.data import GoldMention, PubTatorDocument, iter_pubtator
from linker.textfiles import open_text
from webapp.core.batching import batched
from webapp.core.inputs import check_label, input_path
from webapp.corpus.formats.records import DocumentRecord, LinkRecord, MentionRecord
from webapp.corpus.models import Collection
from webapp.corpus.resolver import ConceptResolver, dictionary_version_for, id_variants
from webapp.corpus.writer import ImportReport, Progress, locked_collection, write_documents
from webapp.vocab.copy import max_length

__all__ = [
    "ImportReport", "ConceptResolver", "id_variants", "import_pubtator", "dictionary_version_for", "locked_collection",
]

DOCUMENT_BATCH = 500
COLLECTION_TITLE_MAX = max_length(Collection, "title")


def import_pubtator(
    path: str | Path,
    *,
    collection_slug: str,
    title: str | None = None,
    dictionary_slug: str | None = None,
    progress: Progress | None = None,
) -> ImportReport:
    """Import the documents and gold mentions of a PubTator file into ``collection_slug`` (created if new).

    With ``dictionary_slug``, gold ids are resolved to Concepts of that dictionary's latest version and the
    collection is linked to the dictionary. ``progress`` is called with (documents read, estimated total).

    Raises :class:`linker.data.ParseError` (``path:line: message``) for a malformed file,
    ``FileNotFoundError`` for a missing one and ``ValueError`` for bad arguments (an unknown dictionary, a
    dictionary without versions, an empty file); the database is then exactly as it was before the call.
    """
    path = input_path(path)
    try:
        validate_slug(collection_slug)
    except ValidationError:
        raise ValueError(f"collection slug {collection_slug!r} must be letters, digits, '-' or '_'") from None
    check_label(title, "collection title", COLLECTION_TITLE_MAX)
    return write_documents(
        # iter_pubtator is looked up here, at call time, so that tests can stand in for the reader.
        batched((_record(path, doc) for doc in iter_pubtator(path)), DOCUMENT_BATCH),
        source=str(path),
        collection_slug=collection_slug,
        title=title,
        dictionary_slug=dictionary_slug,
        progress=progress,
        total=_estimate_documents(path) if progress else None,
    )


def _record(path: Path, doc: PubTatorDocument) -> DocumentRecord:
    metadata: dict[str, object] = {"source": path.name, "line": doc.line}
    if doc.relations:
        metadata["relations"] = [list(r) for r in doc.relations]
    mentions = [_mention(gold) for gold in doc.mentions]
    return DocumentRecord(doc.pmid, doc.text, doc.title, mentions, metadata, line=doc.line)


def _mention(gold: GoldMention) -> MentionRecord:
    # One link per composite part; "A+B" (several concepts for one part) stays joined, as written.
    links = tuple(LinkRecord(part=i, concept_id="+".join(ids)) for i, ids in enumerate(gold.parts))
    return MentionRecord(
        start=gold.start,
        end=gold.end,
        text=gold.text,  # the file's own characters, which the span trigger compares against the document
        mention_type=gold.mention_type,
        links=links or (LinkRecord(part=0, nil=True),),
        part_texts=tuple(gold.part_texts),
        line=gold.line,
    )


def _estimate_documents(path: Path) -> int | None:
    """Title lines in the file, for a progress bar."""
    try:
        with open_text(path) as fh:
            return sum(1 for line in fh if "|t|" in line[:40])
    except (OSError, UnicodeDecodeError, EOFError, zlib.error):  # zlib.error: a damaged .gz file
        return None  # the reader will report where the file is broken
