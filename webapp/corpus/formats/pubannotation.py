"""PubAnnotation JSON (pubannotation.org): a document is ``text`` with ``denotations``, stand-off spans.

One document is an object ``{"text", "sourcedb", "sourceid", "denotations": [{"id", "span": {"begin", "end"},
"obj"}]}``; a collection is a JSON array of them (what PubAnnotation's own collection download holds, one object per
document). Offsets count characters of ``text``. ``obj`` is the span's concept id as the source wrote it
(composite parts joined by ``|``, ``-1`` for NIL, the form PubTator and BioC use here too), and the mention's type
is an attribute ``{"subj": "T1", "pred": "type", "obj": "Disease"}``. A document read with ``tracks`` (several
projects' annotations of one text) has their denotations merged. The document id is ``sourceid`` (with
``sourcedb`` kept in the metadata); its ``divid`` (a PMC article's division), when given, is appended as
``sourceid#divid``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from webapp.corpus.formats.records import (
    DocumentRecord,
    FormatError,
    MentionRecord,
    ids_field,
    links_from_ids,
)
from webapp.corpus.formats.streams import check_storable, diagnose_json, first_byte, json_values, open_binary

__all__ = ["read_pubannotation", "write_pubannotation", "stream_pubannotation", "to_pubannotation"]

SOURCEDB = "PubMed"


def read_pubannotation(path: str | Path) -> Iterator[DocumentRecord]:
    """The documents of a PubAnnotation file (plain or gzip): a JSON array of documents, one document, or JSON
    lines of them, read a document at a time by an incremental JSON parser (ijson)."""
    with open_binary(Path(path)) as fh:
        first = first_byte(fh)
        diagnose = partial(diagnose_json, path, "not JSON", partial(_check_whole, path), multiple=first != b"[")
        if first not in (b"[", b"{", b""):
            refusal = FormatError(path, "", "not JSON (a PubAnnotation file is a JSON array of documents, or documents)")
            diagnose(refusal)
            raise refusal
        values = (json_values(path, fh, "item", diagnose=diagnose) if first == b"["
                  else json_values(path, fh, "", multiple=True, diagnose=diagnose))
        for index, doc in enumerate(values, start=1):
            yield _document(path, doc, index)


def _check_whole(path: str | Path, values: list[Any]) -> None:
    """The checks of a file read whole (:func:`diagnose_json`, for a file the streamed reader refused)."""
    documents = values[0] if len(values) == 1 and isinstance(values[0], list) else values
    for index, doc in enumerate(documents, start=1):
        check_storable(path, _document(path, doc, index), doc)


def _document(path: str | Path, doc: Any, index: int) -> DocumentRecord:
    where = f"document #{index}"
    if not isinstance(doc, dict) or not isinstance(doc.get("text"), str):
        raise FormatError(path, where, "a PubAnnotation document is an object with a string 'text'")
    source_id = str(doc.get("sourceid") or "").strip()
    if not source_id:
        raise FormatError(path, where, "the document has no 'sourceid'")
    if doc.get("divid") not in (None, ""):
        source_id = f"{source_id}#{doc['divid']}"
    where = f"document {source_id}"
    text = doc["text"]
    denotations = _list(path, where, doc, "denotations")
    attributes = _list(path, where, doc, "attributes")
    for number, track in enumerate(_list(path, where, doc, "tracks"), start=1):
        if not isinstance(track, dict):
            raise FormatError(path, f"{where} / track {number}", "a track is an object")
        denotations += _list(path, f"{where} / track {number}", track, "denotations")
        attributes += _list(path, f"{where} / track {number}", track, "attributes")
    types = {str(a.get("subj")): str(a.get("obj")) for a in attributes if isinstance(a, dict) and a.get("pred") == "type"}
    mentions = [_mention(path, where, d, text, types) for d in denotations]
    metadata = {"sourcedb": str(doc.get("sourcedb") or "")}
    return DocumentRecord(source_id, text, "", mentions, metadata, where)


def _list(path: str | Path, where: str, holder: dict[str, Any], key: str) -> list[Any]:
    value = holder.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise FormatError(path, where, f"field '{key}' must be an array")
    return list(value)


def _mention(path: str | Path, where: str, denotation: Any, text: str, types: dict[str, str]) -> MentionRecord:
    span = denotation.get("span") if isinstance(denotation, dict) else None
    ann_where = f"{where} / denotation {denotation.get('id', '?') if isinstance(denotation, dict) else '?'}"
    if not isinstance(span, dict) or not all(isinstance(span.get(k), int) for k in ("begin", "end")):
        raise FormatError(path, ann_where, "a denotation needs 'span': {'begin': integer, 'end': integer}")
    start, end = span["begin"], span["end"]
    if not 0 <= start < end <= len(text):
        raise FormatError(path, ann_where, f"span {start}-{end} outside the document text (length {len(text)})")
    obj = str(denotation.get("obj") or "")
    mention_type = types.get(str(denotation.get("id")), "")
    # A span without a concept is written with its type as obj (PubAnnotation requires one): no link then.
    links = () if obj in ("", mention_type) else links_from_ids(obj)
    return MentionRecord(start, end, text[start:end], mention_type, links, where=ann_where)


def to_pubannotation(record: DocumentRecord) -> dict[str, Any]:
    """One document as a PubAnnotation object."""
    denotations, attributes = [], []
    for number, m in enumerate(record.mentions, start=1):
        denotation: dict[str, Any] = {"id": f"T{number}", "span": {"begin": m.start, "end": m.end}}
        denotation["obj"] = ids_field(m.links) or m.mention_type
        denotations.append(denotation)
        if m.mention_type:
            attributes.append({"id": f"A{number}", "subj": f"T{number}", "pred": "type", "obj": m.mention_type})
    out: dict[str, Any] = {
        "text": record.text,
        "sourcedb": str(record.metadata.get("sourcedb") or SOURCEDB),
        "sourceid": record.external_id,
        "denotations": denotations,
    }
    if attributes:
        out["attributes"] = attributes
    return out


def write_pubannotation(documents: Iterable[DocumentRecord]) -> str:
    """A collection: a JSON array of documents (a one-document export is still an array of one)."""
    return "".join(stream_pubannotation(documents))


def stream_pubannotation(documents: Iterable[DocumentRecord]) -> Iterator[str]:
    """The JSON array a document at a time, one document a line: ``[``, the documents separated by commas, ``]``."""
    first = True
    for record in documents:
        yield ("[\n" if first else ",\n") + json.dumps(to_pubannotation(record), ensure_ascii=False)
        first = False
    yield "[]\n" if first else "\n]\n"
