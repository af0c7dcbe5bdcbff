"""BioC XML and BioC JSON through the ``bioc`` package.

A document's text is its passages laid at their offsets (a gap is filled with spaces), so a PubTator-style
title passage at 0 and abstract passage at ``len(title) + 1`` give back ``title + " " + abstract``.
Annotation locations are offsets in that document text (the passage's offset plus characters into the
passage), counted in characters. Ids are read from the ``identifier`` infon (or ``Identifier``, ``MESH``,
``concept_id``, ``CUI``) and written to ``identifier``: composite parts joined by ``|``, ``-1`` for NIL.
Export adds provenance infons to each annotation (``origin``, ``decided_by``, ``decided_at``, ``decided_via``; on a
project's documents ``adjudication``, ``adjudicator``, ``chosen_annotator``, ``annotator_labels``: see
:func:`provenance_infons`); import ignores them. An export of gold and curator links both writes a span whose
part has both as one annotation per origin (:func:`by_origin`). What the ``bioc`` package would let through and
BioC does not allow is refused by name (:mod:`webapp.corpus.formats.bioc_checks`). Both are read a document at a
time, plain or gzip-compressed (XML with :func:`lxml.etree.iterparse`, JSON with ijson): an import commits them a
batch at a time (:mod:`webapp.corpus.batch_import`).
"""

from __future__ import annotations

import gzip
import io
import json
import re
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import replace
from datetime import date
from functools import partial
from pathlib import Path

import bioc
from bioc import biocjson, biocxml
from lxml import etree

from linker.textfiles import undecodable_line
from webapp.core import limits
from webapp.corpus.formats.bioc_checks import (
    annotations_in,
    check_json_document,
    check_xml_document,
    integer_field,
)
from webapp.corpus.formats.bioc_write import document_xml
from webapp.corpus.formats.records import (
    DocumentRecord,
    FormatError,
    MentionRecord,
    ids_field,
    links_from_ids,
    not_utf8,
)
from webapp.corpus.formats.streams import check_storable, diagnose_json, first_byte, json_values, open_binary

ID_INFONS = ("identifier", "Identifier", "MESH", "concept_id", "CUI")
TYPE_INFONS = ("type", "Type")
TITLE_TYPES = ("title", "front")
SOURCE = "el-workbench"
_XML_DECODER = biocxml.decoder.BioCXMLDecoder()


# --- reading ------------------------------------------------------------------------------------------


def read_bioc_xml(path: str | Path) -> Iterator[DocumentRecord]:
    """The documents of a BioC XML file (plain or gzip), streamed: each ``<document>`` is read, made a record and
    cleared (with the finished siblings before it), so a file of a million documents is never whole in memory."""
    index = 0
    try:
        with open_binary(Path(path)) as fh:
            # No DTD loaded, nothing from the network, entities declared in the file itself only: a reference to an
            # external entity (XXE: file:///etc/passwd) is refused as undefined; and no huge_tree, so libxml2's
            # limits on depth and entity expansion hold.
            context = etree.iterparse(fh, events=("end",), tag="document", huge_tree=False, resolve_entities="internal",
                                      no_network=True, load_dtd=False)
            for _, element in context:
                index += 1
                yield _xml_document(path, index, element)
                element.clear(keep_tail=False)
                parent = element.getparent()
                while element.getprevious() is not None and parent is not None:
                    del parent[0]
            root = context.root
    except etree.XMLSyntaxError as exc:
        undecodable = undecodable_line(path)
        if "UTF-8" in str(exc.msg) or "encoding" in str(exc.msg) or (undecodable and undecodable[0] <= (exc.lineno or 1)):
            raise not_utf8(path, UnicodeDecodeError("utf-8", b"", 0, 1, str(exc.msg))) from exc
        short = "; cut short?" if any(s in str(exc.msg) for s in ("Premature end", "not properly terminated")) else ""
        raise FormatError(path, f"line {max(exc.lineno or 1, 1)}", f"not well-formed XML ({exc.msg}){short}") from exc
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise FormatError(path, "", f"the gzip stream is damaged or cut short ({exc})") from exc
    if root is not None and root.tag != "collection":
        raise FormatError(path, f"line {root.sourceline}", f"not a BioC collection (the root element is <{root.tag}>, not <collection>)")


def _xml_document(path: str | Path, index: int, element: etree._Element) -> DocumentRecord:
    where = f"document {(element.findtext('id') or '').strip() or '#' + str(index)}"
    check_xml_document(path, where, element)
    try:
        document = _XML_DECODER._BioCXMLDecoder__parse_document(element)  # the bioc package's reading of one element
    except (ValueError, TypeError, AttributeError, KeyError) as exc:
        raise FormatError(path, where, f"not a BioC document ({exc})") from exc
    return document_record(path, index, document)


def read_bioc_json(path: str | Path) -> Iterator[DocumentRecord]:
    """The documents of a BioC JSON collection (plain or gzip), streamed: the ``documents`` array is read a document
    at a time by an incremental JSON parser (ijson), so a file of a million documents is never whole in memory."""
    diagnose = partial(diagnose_json, path, "not BioC JSON", partial(_check_whole_json, path))
    with open_binary(Path(path)) as fh:
        if first_byte(fh) not in (b"{", b""):
            refusal = FormatError(path, "", "not a BioC JSON collection (expected a top-level collection object)")
            diagnose(refusal)
            raise refusal
        for index, obj in enumerate(json_values(path, fh, "documents.item", diagnose=diagnose), start=1):
            yield _json_document(path, index, obj)


def _check_whole_json(path: str | Path, values: list[object]) -> None:
    """The checks of a BioC JSON file read whole (:func:`diagnose_json`, for a file the streamed reader refused)."""
    collection = values[0]
    if not isinstance(collection, dict):
        raise FormatError(path, "", "not a BioC JSON collection (expected a top-level collection object)")
    documents = collection.get("documents")
    for index, obj in enumerate(documents if isinstance(documents, list) else [], start=1):
        check_storable(path, _json_document(path, index, obj), obj)


def _json_document(path: str | Path, index: int, obj: object) -> DocumentRecord:
    doc_id = obj.get("id") if isinstance(obj, dict) else None
    where = f"document {doc_id if isinstance(doc_id, str) and doc_id.strip() else '#' + str(index)}"
    if not isinstance(obj, dict):
        raise FormatError(path, where, "not a BioC JSON document (expected an object)")
    try:
        document = biocjson.decoder.parse_doc(obj)
    except (KeyError, TypeError, AttributeError) as exc:
        raise FormatError(path, where, f"not a BioC JSON collection (missing or malformed field {exc})") from exc
    check_json_document(path, index, document)
    return document_record(path, index, document)


def document_record(path: str | Path, index: int, document: bioc.BioCDocument) -> DocumentRecord:
    """One BioC document as a record: its passages laid at their offsets, kept in ``metadata["passages"]``."""
    doc_id = str(document.id or "").strip()
    where = f"document {doc_id or '#' + str(index)}"
    if not doc_id:
        raise FormatError(path, where, "the document has no id")
    try:
        text, title, passages = _text(path, where, document)
        mentions = [_mention(path, ann_where, annotation, text) for annotation, ann_where in annotations_in(document, where)]
        metadata = {k: v for k, v in document.infons.items()}
        metadata["passages"] = passages  # a PMC article's sections, given back by an export
    except (TypeError, AttributeError) as exc:
        # BioC JSON is decoded without a schema: a number where a text belongs, a list for the infons.
        raise FormatError(path, where, f"a field has the wrong type ({exc})") from exc
    return DocumentRecord(doc_id, text, title, mentions, metadata, where)


def _text(path: str | Path, where: str, document: bioc.BioCDocument) -> tuple[str, str, list[dict[str, object]]]:
    """The document's text, its title, and its passages kept as ``{type, offset, length}`` (and their other
    infons: a PMC article's ``section_type``) in document offsets."""
    text = ""
    title = ""
    kept: list[dict[str, object]] = []
    # Passages are laid by offset; "passage N" in an error is the file's N-th, whatever its offset.
    placed = sorted(
        ((integer_field(path, f"{where} / passage {n}", p.offset, "field 'offset'"), n, p) for n, p in enumerate(document.passages, start=1)),
        key=lambda item: item[0],
    )
    for rank, (offset, number, passage) in enumerate(placed, start=1):
        # Checked before the gap before the passage is filled with spaces: an offset of 300,000,000 would
        # otherwise be a 300M-character document (or, at 1e12, a MemoryError).
        _check_length(path, f"{where} / passage {number}", "field 'offset' is", offset)
        body = passage.text
        if body is None:
            # A passage split into sentences carries its text there, each sentence at its own offset.
            body = ""
            sentences = [
                (integer_field(path, f"{where} / passage {number} / sentence {n}", s.offset, "field 'offset'"), s)
                for n, s in enumerate(passage.sentences, start=1)
            ]
            for sentence_offset, sentence in sorted(sentences, key=lambda item: item[0]):
                body = _place(path, f"{where} / passage {number}", body, offset, sentence_offset, sentence.text or "")
        if offset < len(text):
            raise FormatError(path, f"{where} / passage {number}", f"passage at offset {offset} overlaps the text before it (which ends at {len(text)})")
        if rank == 1 and offset == 0 and str(passage.infons.get("type", "")).lower() in TITLE_TYPES:
            title = body
        _check_length(path, f"{where} / passage {number}", "the text up to the end of the passage is", offset + len(body))
        text = text + " " * (offset - len(text)) + body
        infons = {str(k): str(v) for k, v in passage.infons.items() if k != "type"}
        kept.append({"type": str(passage.infons.get("type", "")), "offset": offset, "length": len(body), **infons})
    return text, title, kept


def _check_length(path: str | Path, where: str, subject: str, chars: int) -> None:
    """Refuse an offset or a text past IMPORT_MAX_DOCUMENT_CHARS, naming the document and passage."""
    problem = limits.document_chars_over(subject, chars)
    if problem:
        raise FormatError(path, where, problem)


def _place(path: str | Path, where: str, body: str, base: int, offset: int, piece: str) -> str:
    _check_length(path, where, "a sentence's field 'offset' is", offset)
    _check_length(path, where, "the text up to the end of a sentence is", offset + len(piece))
    at = offset - base
    if at < len(body):
        raise FormatError(path, where, f"sentence at offset {offset} overlaps the sentence before it")
    return body + " " * (at - len(body)) + piece


def _mention(path: str | Path, where: str, annotation: bioc.BioCAnnotation, text: str) -> MentionRecord:
    if not annotation.locations:
        raise FormatError(path, where, "the annotation has no location")
    pieces = [
        (integer_field(path, where, loc.offset, "location field 'offset'"), integer_field(path, where, loc.length, "location field 'length'"))
        for loc in annotation.locations
    ]
    spans = sorted((offset, offset + length) for offset, length in pieces)
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
        collection.add_document(to_document(record))
    return collection


def to_document(record: DocumentRecord) -> bioc.BioCDocument:
    document = bioc.BioCDocument()
    document.id = record.external_id
    passages = _passages(record)
    counter = 0
    for m in (one for mention in record.mentions for one in by_origin(mention)):
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
        annotation.infons.update(provenance_infons(m))
        annotation.add_location(bioc.BioCLocation(m.start, m.end - m.start))
        # The passage holding the start; locations stay document offsets whichever passage holds it.
        holder = next((p for p in reversed(passages) if p.offset <= m.start), passages[0])
        holder.add_annotation(annotation)
    for passage in passages:
        document.add_passage(passage)
    return document


def by_origin(m: MentionRecord) -> list[MentionRecord]:
    """The mention as annotations: one, unless a part has several links (an export of gold and curator links both):
    then one annotation of the span per origin (gold first), each saying its origin, as BioC gives each annotator's
    annotation of a span its own element. An import keeps the first of a span's annotations (the gold one)."""
    parts = [link.part for link in m.links]
    if len(parts) == len(set(parts)):
        return [m]
    origins = sorted({link.origin for link in m.links}, key=lambda o: (o != "gold", o != "curator", o))
    return [replace(m, links=tuple(link for link in m.links if link.origin == origin)) for origin in origins]


def provenance_infons(m: MentionRecord) -> dict[str, str]:
    """Whose the annotation's links are (``origin``: gold, curator or model), who decided them, when and how, and the
    span's adjudication, as infons (strings: a value per composite part joined by ``|`` like ``identifier``, one
    value where every part has the same; the annotators' labels as compact JSON). The reader ignores them: an
    imported file's links are gold."""
    infons: dict[str, str] = {}
    for key, values in (
        ("origin", [link.origin for link in m.links]),
        ("decided_by", [link.decided_by for link in m.links]),
        ("decided_at", [link.decided_at.isoformat() if link.decided_at else "" for link in m.links]),
        ("decided_via", [link.decided_via for link in m.links]),
    ):
        if any(values):
            infons[key] = values[0] if len(set(values)) == 1 else "|".join(values)
    adjudication = m.adjudication
    if adjudication is not None:
        infons["adjudication"] = adjudication.state
        if adjudication.adjudicator:
            infons["adjudicator"] = adjudication.adjudicator
        if adjudication.chosen_annotator:
            infons["chosen_annotator"] = adjudication.chosen_annotator
        if adjudication.annotator_labels:
            infons["annotator_labels"] = json.dumps(
                dict(adjudication.annotator_labels), ensure_ascii=False, separators=(",", ":"), sort_keys=True
            )
    return infons


def _passages(record: DocumentRecord) -> list[bioc.BioCPassage]:
    kept = _kept_passages(record)
    if kept:
        return kept
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


def _kept_passages(record: DocumentRecord) -> list[bioc.BioCPassage]:
    """The passages an import kept (``metadata["passages"]``: BioC, PubMed), when they still tile the text in order;
    else none (the caller falls back to title and abstract)."""
    kept = record.metadata.get("passages")
    if not isinstance(kept, list) or not kept:
        return []
    passages, end = [], 0
    for item in kept:
        try:
            offset, length = int(item["offset"]), int(item["length"])
        except (TypeError, KeyError, ValueError):
            return []
        if offset < end or offset + length > len(record.text):
            return []
        passage = bioc.BioCPassage()
        passage.infons.update({str(k): str(v) for k, v in item.items() if k not in ("offset", "length")})
        passage.offset = offset
        passage.text = record.text[offset : offset + length]
        passages.append(passage)
        end = offset + length
    return passages


# Characters XML 1.0 cannot carry (C0 controls other than tab and line breaks, lone surrogates, U+FFFE/F).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def write_bioc_xml(documents: Iterable[DocumentRecord]) -> str:
    """BioC XML; a character XML cannot carry becomes a space, one for one, so every offset stays exact."""
    return "".join(stream_bioc_xml(documents))


def stream_bioc_xml(documents: Iterable[DocumentRecord]) -> Iterator[str]:
    """The collection's head, then a ``<document>`` element at a time, then its end."""
    yield (
        "<?xml version='1.0' encoding='utf-8' standalone='yes'?>\n<collection>\n"
        f"  <source>{SOURCE}</source>\n  <date>{date.today().isoformat()}</date>\n  <key>workbench.key</key>\n"
    )
    for doc in documents:
        yield document_xml(to_document(_xml_safe(doc)))
    yield "</collection>\n"


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
