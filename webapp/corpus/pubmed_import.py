"""Import PubMed baseline and update files into a collection: streamed, committed per batch, resumable.

A PubMed file is read as what it is, one file of a series that keeps a collection in step with PubMed. The batches,
the resume point and the comparison with the documents already there are :mod:`webapp.corpus.batch_import`'s,
shared with the other streamed formats (BioC, JSON Lines, PubAnnotation); what is PubMed's own is its deletions
and that a PMID repeated in a file is a later version of it (the later wins), not a document of its own:

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

from pathlib import Path

from webapp.core.inputs import input_path
from webapp.corpus.batch_import import BatchReport, Source, import_batches, resume_point
from webapp.corpus.formats.pubmed import count_articles, iter_pubmed
from webapp.corpus.writer import Progress

__all__ = ["BATCH_ITEMS", "PubmedReport", "import_pubmed", "resume_point"]

BATCH_ITEMS = 500
PubmedReport = BatchReport  # new, unchanged, replaced, deleted, kept_curated: what an update did


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
) -> BatchReport:
    """Import a PubMed XML file (``.xml`` or ``.xml.gz``) into ``collection_slug`` (created if new), a batch per
    transaction. Raises :class:`FormatError` for a malformed file: the batches before the fault stay committed,
    and with ``job_id`` a later import of the file continues after them."""
    path = input_path(path)
    start_at = resume_point(path.name, collection_slug) if job_id else 0
    return import_batches(
        Source(path, "PubMed", "PMID", number=False), iter_pubmed(path, start_at), collection_slug=collection_slug,
        title=title, dictionary_slug=dictionary_slug, progress=progress, job_id=job_id, force=force,
        batch_items=batch_items or BATCH_ITEMS, total=count_articles(path) if progress else None, start_at=start_at,
    )
