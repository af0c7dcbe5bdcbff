"""PubTator: ``PMID|t|title``, ``PMID|a|abstract``, then one tab-separated line per mention.

Offsets count the title, one space, then the abstract (characters, as Python strings count them). Reading
goes through :func:`linker.data.iter_pubtator` (the one PubTator parser of the project); importing goes
through :func:`webapp.corpus.importers.import_pubtator`. A text with line breaks cannot be written on one
line: each break becomes a space, which keeps every offset. A UTF-8 byte-order mark opening a file is skipped (by ``linker.textfiles.open_text``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from linker.data import iter_pubtator
from webapp.corpus.formats.records import DocumentRecord, MentionRecord, ids_field, links_from_ids

_LINE_BREAKS = str.maketrans({"\n": " ", "\r": " ", "\t": " ", "\u2028": " ", "\u2029": " ", "\x0b": " ", "\x0c": " ", "\x1c": " ", "\x1d": " ", "\x1e": " ", "\x85": " "})


def read_pubtator(path: str | Path) -> Iterator[DocumentRecord]:
    """Records of a PubTator file; raises :class:`linker.data.ParseError` (``file:line: message``)."""
    for doc in iter_pubtator(path):
        external_id = doc.pmid if doc.occurrence == 1 else f"{doc.pmid}#{doc.occurrence}"
        mentions = [
            MentionRecord(
                start=m.start,
                end=m.end,
                text=m.text,
                mention_type=m.mention_type,
                links=links_from_ids(m.ids_raw),
                part_texts=m.part_texts,
                where=f"line {m.line or doc.line}",
                line=m.line,
            )
            for m in doc.mentions
        ]
        metadata: dict[str, object] = {"relations": [list(r) for r in doc.relations]} if doc.relations else {}
        if doc.occurrence > 1:
            metadata["repeat_of"] = doc.pmid
        yield DocumentRecord(external_id, doc.text, doc.title, mentions, metadata, f"line {doc.line}")



def _one_line(text: str) -> str:
    return text.translate(_LINE_BREAKS)


def write_pubtator(documents: Iterable[DocumentRecord]) -> str:
    return "".join(stream_pubtator(documents))


def stream_pubtator(documents: Iterable[DocumentRecord]) -> Iterator[str]:
    """The file a document (its lines and the blank line after them) at a time."""
    for doc in documents:
        out: list[str] = []
        # A document stored as "PMID#2" (a repeat inside its source file) is written under its PMID again.
        pmid = _one_line(str(doc.metadata.get("repeat_of") or doc.external_id)).replace("|", "_") or "-"
        title, abstract = doc.split_title()
        if not title:
            title, abstract = doc.text, ""
        out.append(f"{pmid}|t|{_one_line(title)}")
        out.append(f"{pmid}|a|{_one_line(abstract)}")
        for m in doc.mentions:
            cols = [pmid, str(m.start), str(m.end), _one_line(m.text), _one_line(m.mention_type), ids_field(m.links)]
            if m.part_texts:
                cols.append("|".join(_one_line(t) for t in m.part_texts))
            out.append("\t".join(cols))
        for relation in doc.metadata.get("relations") or []:
            out.append("\t".join([pmid, *(_one_line(str(v)) for v in relation)]))
        yield "\n".join(out) + "\n\n"
