"""Import BioC XML, BioC JSON, JSON Lines and PubAnnotation files a batch at a time, resumable (issue #45).

Each reader streams its file (plain or gzip), a document at a time (:mod:`webapp.corpus.formats.streams`); the
batches, the resume point and the comparison with the documents already in the collection are the PubMed import's
(:mod:`webapp.corpus.batch_import`): a document already there with the same text is ``unchanged`` (importing a
file twice is a no-op), one whose text changed is ``replaced`` with the file's mentions, unless curators decided on
it or it holds gold annotations (then it is kept, and named, unless ``force``). An id repeated inside the file is
its own document ``ID#2``, as in every format but PubMed's.
"""

from __future__ import annotations

from pathlib import Path

from webapp.corpus.batch_import import BATCH_ITEMS, BatchReport, Source, import_batches, resume_point
from webapp.corpus.formats import get_format
from webapp.corpus.formats.streams import count_needles, positioned
from webapp.corpus.writer import Progress

__all__ = ["STREAMED", "import_streamed"]

# Format -> what a byte scan counts once per document (the progress bar's total; an estimate at worst).
STREAMED: dict[str, tuple[bytes, ...]] = {
    "bioc-xml": (b"<document>", b"<document "),
    "bioc-json": (b'"passages"',),
    "jsonl": (b"\n",),
    "pubannotation": (b'"sourceid"',),
}


def import_streamed(
    path: Path,
    fmt: str,
    *,
    collection_slug: str,
    title: str | None = None,
    dictionary_slug: str | None = None,
    progress: Progress | None = None,
    job_id: int | None = None,
    force: bool = False,
    batch_items: int | None = None,
) -> BatchReport:
    """Import a file of format ``fmt`` (one of :data:`STREAMED`) into ``collection_slug``, a batch per transaction;
    with ``job_id``, continuing after what an unfinished import of the same file committed."""
    spec = get_format(fmt)
    start_at = resume_point(path.name, collection_slug) if job_id else 0
    source = Source(path, spec.label, "document")
    return import_batches(
        source, positioned(spec.read(path)), collection_slug=collection_slug, title=title,
        dictionary_slug=dictionary_slug, progress=progress, job_id=job_id, force=force,
        batch_items=batch_items or BATCH_ITEMS, total=count_needles(path, STREAMED[fmt]) if progress else None,
        start_at=start_at,
    )
