"""Generated BioC collections of many PMC-like documents (a front passage, an abstract and a paragraph with their
``section_type`` infons, two annotated mentions each), as BioC XML or BioC JSON, plain or gzip: what the streamed
import's tests (tests/integration/test_streamed_import.py) and its benchmark (bench/bioc_import.py) read."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import IO, Any
from xml.sax.saxutils import escape

PARAGRAPH = "Carriers of the variant had a raised risk of colorectal cancer in every cohort that was studied. " * 6


def passages(n: int, revised: bool = False) -> list[tuple[str, str, str]]:
    """(type, section_type, text) of document ``n``'s passages; ``revised``: another abstract."""
    abstract = f"{'Revised. ' if revised else ''}Colorectal cancer in APC carriers, case {n}."
    return [("front", "TITLE", f"Article {n} on APC."), ("abstract", "ABSTRACT", abstract), ("paragraph", "INTRO", PARAGRAPH)]


def _open(path: Path, gz: bool) -> IO[str]:
    return gzip.open(path, "wt", encoding="utf-8", compresslevel=1) if gz else open(path, "w", encoding="utf-8")


def _laid(n: int, revised: bool) -> list[tuple[int, str, str, str]]:
    out, offset = [], 0
    for kind, section, text in passages(n, revised):
        out.append((offset, kind, section, text))
        offset += len(text) + 1
    return out


def _mentions(laid: list[tuple[int, str, str, str]]) -> list[tuple[int, int, str, str, str]]:
    """(passage index, offset, text, type, identifier): "Colorectal cancer" and "APC" in the abstract."""
    base = laid[1][0]
    text = laid[1][3]
    start = text.index("Colorectal cancer")
    return [(1, base + start, "Colorectal cancer", "Disease", "MESH:D015179"),
            (1, base + text.index("APC"), "APC", "Gene", "324")]


def write_bioc_xml(path: Path, n: int, *, gz: bool = False, first: int = 1, revised: frozenset[int] = frozenset()) -> None:
    with _open(path, gz) as fh:
        fh.write("<?xml version='1.0' encoding='utf-8'?>\n<collection><source>PMC</source><date>2024</date><key>BioC.key</key>\n")
        for doc in range(first, first + n):
            laid = _laid(doc, doc in revised)
            mentions = _mentions(laid)
            fh.write(f"<document><id>PMC{doc}</id><infon key=\"license\">CC BY</infon>")
            for index, (offset, kind, section, text) in enumerate(laid):
                fh.write(f'<passage><infon key="type">{kind}</infon><infon key="section_type">{section}</infon>'
                         f"<offset>{offset}</offset><text>{escape(text)}</text>")
                for number, (where, start, span, mtype, ident) in enumerate(mentions, start=1):
                    if where == index:
                        fh.write(f'<annotation id="T{number}"><infon key="type">{mtype}</infon><infon key="identifier">'
                                 f'{ident}</infon><location offset="{start}" length="{len(span)}"/><text>{span}</text></annotation>')
                fh.write("</passage>")
            fh.write("</document>\n")
        fh.write("</collection>\n")


def bioc_json_document(doc: int, revised: bool = False) -> dict[str, Any]:
    laid = _laid(doc, revised)
    mentions = _mentions(laid)
    return {
        "id": f"PMC{doc}", "infons": {"license": "CC BY"}, "relations": [],
        "passages": [
            {"offset": offset, "infons": {"type": kind, "section_type": section}, "text": text, "sentences": [],
             "relations": [],
             "annotations": [
                 {"id": f"T{number}", "infons": {"type": mtype, "identifier": ident}, "text": span,
                  "locations": [{"offset": start, "length": len(span)}]}
                 for number, (where, start, span, mtype, ident) in enumerate(mentions, start=1) if where == index
             ]}
            for index, (offset, kind, section, text) in enumerate(laid)
        ],
    }


def write_bioc_json(path: Path, n: int, *, gz: bool = False, first: int = 1, revised: frozenset[int] = frozenset(),
                    bad: int | None = None) -> None:
    """``bad``: that document's first annotation reads another text than its span (a refused document)."""
    with _open(path, gz) as fh:
        fh.write('{"source": "PMC", "date": "2024", "key": "BioC.key", "infons": {}, "documents": [\n')
        for doc in range(first, first + n):
            document = bioc_json_document(doc, doc in revised)
            if doc == bad:
                document["passages"][1]["annotations"][0]["text"] = "Gout"
            fh.write(("" if doc == first else ",\n") + json.dumps(document))
        fh.write("\n]}\n")
