"""PubMed baseline and update files (``pubmed24n0001.xml.gz``): MEDLINE citations in NLM's PubMed XML, streamed.

A file is read with :func:`lxml.etree.iterparse` over the (gzip) stream, one top-level element at a time, and each
element is cleared once read, so a 30,000-article file (or a million of them) is never whole in memory.

- A ``PubmedArticle`` is one document whose id is its PMID. Its text is ``ArticleTitle`` and the ``AbstractText``
  sections joined by single spaces; a labelled section keeps its label (``BACKGROUND: ...``), as PubTator writes
  it. The passages are kept in ``metadata["passages"]`` (``type``, ``offset``, ``length`` in characters of the
  text: ``title`` at 0, ``abstract`` after it), the shape BioC passages are kept in.
- A ``DeleteCitation`` (update files) lists PMIDs that NLM withdrew: :class:`Deletion`, which the importer
  (:mod:`webapp.corpus.pubmed_import`) applies to the collection.

:func:`iter_pubmed` yields both, in file order, each with its position (the count of top-level items read), which
the importer records per committed batch so that an interrupted import continues where it stopped.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from lxml import etree

from webapp.corpus.formats.records import DocumentRecord, FormatError
from webapp.corpus.formats.streams import Positioned, count_needles, open_binary

__all__ = ["Deletion", "iter_pubmed", "read_pubmed", "write_pubmed", "count_articles", "pubmed_text"]

_ITEMS = ("PubmedArticle", "DeleteCitation", "PubmedBookArticle")


@dataclass(frozen=True)
class Deletion:
    """A ``DeleteCitation``: the PMIDs an update file withdraws."""

    pmids: tuple[str, ...]
    position: int


Article = Positioned  # a PubmedArticle's record and its position


def iter_pubmed(path: str | Path, start_at: int = 0) -> Iterator[Article | Deletion]:
    """Articles and deletions of a PubMed XML file (plain or gzip) in file order; the first ``start_at`` items are
    read past (parsed, never built into records). Raises :class:`FormatError` naming the line or the article."""
    path = Path(path)
    position = 0
    try:
        with open_binary(path) as fh:
            context = etree.iterparse(fh, events=("end",), tag=_ITEMS, huge_tree=True, resolve_entities=False,
                                      no_network=True, load_dtd=False)
            for _, element in context:
                position += 1
                if position > start_at:
                    yield _item(path, element, position)
                # Free what was read: the element, and the finished siblings before it that the tree still holds.
                element.clear(keep_tail=False)
                parent = element.getparent()
                while element.getprevious() is not None and parent is not None:
                    del parent[0]
    except etree.XMLSyntaxError as exc:
        short = "; cut short?" if any(s in str(exc.msg) for s in ("Premature end", "no element found")) else ""
        raise FormatError(path, f"line {max(exc.lineno or 1, 1)}", f"not well-formed XML ({exc.msg}){short}") from exc
    except (EOFError, zlib.error, OSError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise FormatError(path, "", f"the gzip stream is damaged or cut short ({exc})") from exc
    if position == 0:
        raise FormatError(path, "", "no PubmedArticle or DeleteCitation: not a PubMed XML file (PubmedArticleSet)?")


def read_pubmed(path: str | Path) -> Iterator[DocumentRecord]:
    """The articles alone (the reader :data:`webapp.corpus.formats.FORMATS` lists); deletions are the importer's."""
    for item in iter_pubmed(path):
        if isinstance(item, Article):
            yield item.record


def count_articles(path: str | Path) -> int | None:
    """How many top-level items the file holds, by a scan of its bytes: the progress bar's total."""
    return count_needles(path, (b"<PubmedArticle>", b"<PubmedArticle ", b"<DeleteCitation>", b"<PubmedBookArticle>"))


def _item(path: Path, element: etree._Element, position: int) -> Article | Deletion:
    if element.tag == "DeleteCitation":
        return Deletion(tuple(_text(p) for p in element.iter("PMID") if _text(p)), position)
    pmid_element = element.find("MedlineCitation/PMID")
    if pmid_element is None:
        pmid_element = element.find(".//PMID")  # a PubmedBookArticle's BookDocument/PMID
    pmid = _text(pmid_element)
    where = f"PubmedArticle {pmid or '#' + str(position)}"
    if not pmid:
        raise FormatError(path, f"{where} (line {element.sourceline})", "the article has no PMID")
    title = _text(element.find(".//ArticleTitle")) or _text(element.find(".//BookTitle"))
    sections = []
    for abstract in element.iter("AbstractText"):
        if abstract.getparent() is None or abstract.getparent().tag != "Abstract":
            continue  # an OtherAbstract's (another language, a plain-language summary): not the abstract
        body = _text(abstract)
        label = (abstract.get("Label") or "").strip()
        if body:
            sections.append(f"{label}: {body}" if label else body)
    record = pubmed_text(pmid, title, " ".join(sections), where)
    if not record.text:
        raise FormatError(path, f"{where} (line {element.sourceline})", "the article has neither a title nor an abstract")
    record.metadata["source"] = path.name
    version = pmid_element.get("Version") if pmid_element is not None else None
    if version and version != "1":
        record.metadata["pmid_version"] = version
    return Article(record, position)


def pubmed_text(pmid: str, title: str, abstract: str, where: str = "") -> DocumentRecord:
    """A document of a title and an abstract, its passages in ``metadata["passages"]``."""
    text = f"{title} {abstract}" if title and abstract else title or abstract
    passages = []
    if title:
        passages.append({"type": "title", "offset": 0, "length": len(title)})
    if abstract:
        passages.append({"type": "abstract", "offset": len(text) - len(abstract), "length": len(abstract)})
    return DocumentRecord(pmid, text, title, [], {"passages": passages}, where)


def _text(element: etree._Element | None) -> str:
    """An element's text with its inline markup (``<i>``, ``<sup>``) read through, whitespace runs made one space."""
    if element is None:
        return ""
    return " ".join("".join(element.itertext()).split())


def write_pubmed(documents: Iterable[DocumentRecord]) -> str:
    """A PubmedArticleSet of the documents: ArticleTitle and one AbstractText each (mentions have no place in it)."""
    out = ['<?xml version="1.0" encoding="utf-8"?>', "<PubmedArticleSet>"]
    for record in documents:
        title, rest = record.split_title()
        out.append(
            f"<PubmedArticle><MedlineCitation><PMID>{escape(record.external_id)}</PMID><Article>"
            f"<ArticleTitle>{escape(title)}</ArticleTitle>"
            + (f"<Abstract><AbstractText>{escape(rest)}</AbstractText></Abstract>" if rest else "")
            + "</Article></MedlineCitation></PubmedArticle>"
        )
    out.append("</PubmedArticleSet>\n")
    return "\n".join(out)
