"""BioC XML's ``<document>`` element written as text (:func:`webapp.corpus.formats.bioc.stream_bioc_xml`): the
bioc package's encoder builds lxml elements to serialise them, a third of an export's time at 8 annotations a
document; this writes the same bytes."""

from __future__ import annotations

import bioc

__all__ = ["document_xml"]


def document_xml(document: bioc.BioCDocument) -> str:
    """A ``<document>`` as the bioc package's encoder writes it (id, passages with their infons, offset, text and
    annotations), joined as text. Only what :func:`webapp.corpus.formats.bioc.to_document` makes is written: it
    makes no sentences, relations or document infons."""
    out = ["<document>\n  <id>", _xml_text(str(document.id)), "</id>\n"]
    for passage in document.passages:
        out.append("  <passage>\n")
        out += _infons_xml(passage.infons, "    ")
        out.append(f"    <offset>{int(passage.offset)}</offset>\n")
        if passage.text:
            out += ["    <text>", _xml_text(passage.text), "</text>\n"]
        for annotation in passage.annotations:
            out.append(f'    <annotation id="{_xml_attribute(str(annotation.id))}">\n')
            out += _infons_xml(annotation.infons, "      ")
            out += [f'      <location offset="{int(loc.offset)}" length="{int(loc.length)}"/>\n' for loc in annotation.locations]
            out += ["      <text>", _xml_text(annotation.text or ""), "</text>\n    </annotation>\n"]
        out.append("  </passage>\n")
    out.append("</document>\n")
    return "".join(out)


def _infons_xml(infons: dict[str, str], indent: str) -> list[str]:
    return [f'{indent}<infon key="{_xml_attribute(str(k))}">{_xml_text(str(v))}</infon>\n' for k, v in infons.items()]


def _xml_text(text: str) -> str:
    """Text content escaped; a carriage return as a reference (a parser would read a bare one as a line feed)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\r", "&#13;")


def _xml_attribute(text: str) -> str:
    return _xml_text(text).replace('"', "&quot;").replace("\n", "&#10;").replace("\t", "&#9;")
