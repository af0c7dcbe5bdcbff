"""BioC XML and BioC JSON through the ``bioc`` package.

A document's text is its passages laid at their offsets (a gap is filled with spaces), so a PubTator-style
title passage at 0 and abstract passage at ``len(title) + 1`` give back ``title + " " + abstract``.
Annotation locations are offsets in that document text (the passage's offset plus characters into the
passage), counted in characters. Ids are read from the ``identifier`` infon (or ``Identifier``, ``MESH``,
``concept_id``, ``CUI``) and written to ``identifier``: composite parts joined by ``|``, ``-1`` for NIL.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Iterator
from dataclasses import replace
from datetime import date
from pathlib import Path

import bioc
from bioc import biocjson, biocxml
from lxml import etree

from webapp.corpus.formats.records import (
    DocumentRecord,
    FormatError,
    MentionRecord,
    ids_field,
    links_from_ids,
)

ID_INFONS = ("identifier", "Identifier", "MESH", "concept_id", "CUI")
TYPE_INFONS = ("type", "Type")
TITLE_TYPES = ("title", "front")
SOURCE = "el-workbench"


# --- reading ------------------------------------------------------------------------------------------


def read_bioc_xml(path: str | Path) -> Iterator[DocumentRecord]:
    try:
        with open(path, encoding="utf-8") as fh:
            collection = biocxml.load(fh)
    except etree.XMLSyntaxError as exc:
        raise FormatError(path, f"line {exc.lineno}", f"not well-formed XML ({exc.msg})") from exc
    except UnicodeDecodeError as exc:
        raise FormatError(path, "", f"not UTF-8 text ({exc.reason})") from exc
    except (ValueError, TypeError, AttributeError) as exc:
        raise FormatError(path, "", f"not a BioC collection ({exc})") from exc
    yield from _documents(path, collection)


def read_bioc_json(path: str | Path) -> Iterator[DocumentRecord]:
    try:
        with open(path, encoding="utf-8") as fh:
            collection = biocjson.load(fh)
    except UnicodeDecodeError as exc:
        raise FormatError(path, "", f"not UTF-8 text ({exc.reason})") from exc
    except ValueError as exc:  # json.JSONDecodeError is a ValueError with a line number
        where = f"line {exc.lineno}" if hasattr(exc, "lineno") else ""
        raise FormatError(path, where, f"not BioC JSON ({exc})") from exc
    except (KeyError, TypeError, AttributeError) as exc:
        raise FormatError(path, "", f"not a BioC JSON collection (missing or malformed field {exc})") from exc
    if not isinstance(collection, bioc.BioCCollection):
        raise FormatError(path, "", "not a BioC JSON collection (expected a top-level collection object)")
    yield from _documents(path, collection)


def _documents(path: str | Path, collection: bioc.BioCCollection) -> Iterator[DocumentRecord]:
    for index, document in enumerate(collection.documents, start=1):
        doc_id = str(document.id or "").strip()
        where = f"document {doc_id or '#' + str(index)}"
        if not doc_id:
            raise FormatError(path, where, "the document has no id")
        text, title = _text(path, where, document)
        mentions: list[MentionRecord] = []
        for annotation, ann_where in _annotations(document, where):
            mentions.append(_mention(path, ann_where, annotation, text))
        yield DocumentRecord(doc_id, text, title, mentions, {k: v for k, v in document.infons.items()}, where)


def _text(path: str | Path, where: str, document: bioc.BioCDocument) -> tuple[str, str]:
    text = ""
    title = ""
    for number, passage in enumerate(sorted(document.passages, key=lambda p: int(p.offset)), start=1):
        offset = int(passage.offset)
        body = passage.text
        if body is None:
            # A passage split into sentences carries its text there, each sentence at its own offset.
            body = ""
            for sentence in sorted(passage.sentences, key=lambda s: int(s.offset)):
                body = _place(path, f"{where} / passage {number}", body, offset, int(sentence.offset), sentence.text or "")
        if offset < len(text):
            raise FormatError(path, f"{where} / passage {number}", f"passage at offset {offset} overlaps the text before it (which ends at {len(text)})")
        if number == 1 and offset == 0 and str(passage.infons.get("type", "")).lower() in TITLE_TYPES:
            title = body
        text = text + " " * (offset - len(text)) + body
    return text, title


def _place(path: str | Path, where: str, body: str, base: int, offset: int, piece: str) -> str:
    at = offset - base
    if at < len(body):
        raise FormatError(path, where, f"sentence at offset {offset} overlaps the sentence before it")
    return body + " " * (at - len(body)) + piece


def _annotations(document: bioc.BioCDocument, where: str) -> Iterator[tuple[bioc.BioCAnnotation, str]]:
    for annotation in document.annotations:
        yield annotation, f"{where} / annotation {annotation.id}"
    for passage in document.passages:
        for annotation in passage.annotations:
            yield annotation, f"{where} / annotation {annotation.id}"
        for sentence in passage.sentences:
            for annotation in sentence.annotations:
                yield annotation, f"{where} / annotation {annotation.id}"


def _mention(path: str | Path, where: str, annotation: bioc.BioCAnnotation, text: str) -> MentionRecord:
    if not annotation.locations:
        raise FormatError(path, where, "the annotation has no location")
    spans = sorted((int(loc.offset), int(loc.offset) + int(loc.length)) for loc in annotation.locations)
    start, end = spans[0][0], max(e for _, e in spans)
    if not 0 <= start < end <= len(text):
        raise FormatError(path, where, f"span {start}-{end} outside the document text (length {len(text)})")
    # A discontinuous annotation's text is its pieces; only a single span can be compared with the text.
    if len(spans) == 1 and annotation.text is not None and text[start:end] != annotation.text:
        raise FormatError(path, where, f"span {start}-{end} reads {text[start:end]!r} in the text, the file says {annotation.text!r}")
    mention_type = next((str(annotation.infons[k]) for k in TYPE_INFONS if annotation.infons.get(k)), "")
    raw_ids = next((str(annotation.infons[k]) for k in ID_INFONS if annotation.infons.get(k)), "")
    part_texts = tuple(t for t in str(annotation.infons.get("part_texts", "")).split("|") if t)
    return MentionRecord(start, end, text[start:end], mention_type, links_from_ids(raw_ids), part_texts, where=where)


# --- writing ------------------------------------------------------------------------------------------


def to_collection(documents: Iterable[DocumentRecord]) -> bioc.BioCCollection:
    collection = bioc.BioCCollection()
    collection.source = SOURCE
    collection.date = date.today().isoformat()
    collection.key = "workbench.key"
    for record in documents:
        document = bioc.BioCDocument()
        document.id = record.external_id
        passages = _passages(record)
        counter = 0
        for m in record.mentions:
            counter += 1
            annotation = bioc.BioCAnnotation()
            annotation.id = str(counter)
            annotation.text = record.text[m.start : m.end]
            if m.mention_type:
                annotation.infons["type"] = m.mention_type
            if m.links:
                annotation.infons["identifier"] = ids_field(m.links)
            if m.part_texts:
                annotation.infons["part_texts"] = "|".join(m.part_texts)
            annotation.add_location(bioc.BioCLocation(m.start, m.end - m.start))
            # The passage holding the start; locations stay document offsets whichever passage holds it.
            holder = next(p for p in reversed(passages) if p.offset <= m.start)
            holder.add_annotation(annotation)
        for passage in passages:
            document.add_passage(passage)
        collection.add_document(document)
    return collection


def _passages(record: DocumentRecord) -> list[bioc.BioCPassage]:
    title, rest = record.split_title()
    pieces = [("title", 0, title), ("abstract", len(title) + 1, rest)] if title else [("text", 0, record.text)]
    passages = []
    for kind, offset, body in pieces:
        if kind == "abstract" and not body:
            continue
        passage = bioc.BioCPassage()
        passage.infons["type"] = kind
        passage.offset = offset
        passage.text = body
        passages.append(passage)
    return passages


# Characters XML 1.0 cannot carry (C0 controls other than tab and line breaks, lone surrogates, U+FFFE/F).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def write_bioc_xml(documents: Iterable[DocumentRecord]) -> str:
    """BioC XML; a character XML cannot carry becomes a space, one for one, so every offset stays exact."""
    return biocxml.dumps(to_collection(_xml_safe(d) for d in documents))


def _xml_safe(doc: DocumentRecord) -> DocumentRecord:
    if not _NOT_XML.search(doc.text) and not _NOT_XML.search(doc.title):
        return doc
    clean = _NOT_XML.sub(" ", doc.text)
    return replace(
        doc,
        text=clean,
        title=_NOT_XML.sub(" ", doc.title),
        mentions=[replace(m, text=clean[m.start : m.end]) for m in doc.mentions],
    )


def write_bioc_json(documents: Iterable[DocumentRecord]) -> str:
    buffer = io.StringIO()
    biocjson.dump(to_collection(documents), buffer, indent=1)
    return buffer.getvalue()
