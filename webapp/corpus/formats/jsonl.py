"""JSON Lines: one document per line, with its mentions and their links.

``{"id": "1234", "title": "...", "text": "...", "metadata": {...}, "mentions": [{"start": 0, "end": 7,
"text": "...", "type": "Disease", "status": "accepted", "part_texts": [], "links": [{"part": 0,
"concept_id": "MESH:D001249", "nil": false, "origin": "curator", "score": null, "model_version": "",
"decided_by": "bob", "decided_at": "2025-05-01T09:30:00+00:00", "decided_via": "candidate"}],
"adjudication": "adjudicated", "adjudicator": "carol", "chosen_annotator": "bob",
"annotator_labels": {"bob": "MESH:D001249", "dave": "NIL"}}]}``

Offsets count characters (Python string indices) of ``text``. On import a link's origin, score and status
are informative only: links read from a file become gold links of the collection. A part with links of two origins
(an export of ``links=all``: its gold link, then the curator's) is imported with the first.

Provenance, written on export and ignored on import: ``decided_by`` is the curator's username, ``gold``, or a
suggestion's model version; ``decided_via`` how a curator decided (null for gold and suggestions). A mention of
a project's document carries ``adjudication``: ``open``, ``agreed`` or ``adjudicated`` (with the adjudicator,
the annotator whose decision was taken, if any, and each annotator's label); other mentions have no such key.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from webapp.corpus.formats.records import (
    ADJUDICATION_OPEN,
    MAX_METADATA_DEPTH,
    DocumentRecord,
    FormatError,
    LinkRecord,
    MentionRecord,
    deep_json_keys,
    not_utf8,
)
from webapp.corpus.formats.streams import open_binary


def read_jsonl(path: str | Path) -> Iterator[DocumentRecord]:
    """The documents of a JSON Lines file (plain or gzip), a line at a time."""
    lineno = 0
    try:
        with open_binary(Path(path)) as fh:
            for lineno, raw in enumerate(fh, start=1):
                # A byte-order mark (some editors write one) is not JSON, and not an error of the file.
                line = (raw[3:] if lineno == 1 and raw.startswith(b"\xef\xbb\xbf") else raw).decode("utf-8")
                if line.strip():
                    yield parse_line(path, lineno, line)
    except UnicodeDecodeError as exc:
        raise not_utf8(path, exc) from exc
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise FormatError(path, f"line {lineno + 1}", f"the gzip stream is damaged or cut short ({exc})") from exc


def parse_line(path: str | Path, lineno: int, line: str) -> DocumentRecord:
    """One line's document; errors name the file and the line."""
    where = f"line {lineno}"
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        # Some of json's messages end in "at" ("Invalid control character at"): not twice.
        raise FormatError(path, where, f"not JSON ({exc.msg.removesuffix(' at')} at column {exc.colno})") from exc
    except RecursionError:
        # json gives up around a thousand levels down; name the top-level field that nests so deep.
        keys = (deep_json_keys(line, MAX_METADATA_DEPTH + 1) or (0, []))[1]
        field = f"field {keys[0]!r}" if keys else "the line"
        raise FormatError(path, where, f"{field} is nested too deeply (more than {MAX_METADATA_DEPTH} levels)") from None
    except ValueError as exc:
        # Not a JSONDecodeError: a number of more digits than Python converts (4,300) stops json.loads with a
        # plain ValueError that names neither the file nor the line.
        raise FormatError(path, where, f"not JSON ({str(exc).split(':')[0]})") from None
    return _document(path, where, obj)


def _document(path: str | Path, where: str, obj: Any) -> DocumentRecord:
    if not isinstance(obj, dict):
        raise FormatError(path, where, "expected one JSON object per line")
    doc_id = _field(path, where, obj, "id", (str, int))
    text = _field(path, where, obj, "text", str)
    title = _field(path, where, obj, "title", str, "")
    metadata = _field(path, where, obj, "metadata", dict, {})
    mentions = []
    for index, raw in enumerate(_field(path, where, obj, "mentions", list, []), start=1):
        m_where = f"{where}: mention {index}"
        if not isinstance(raw, dict):
            raise FormatError(path, m_where, "a mention must be an object")
        start = _field(path, m_where, raw, "start", int)
        end = _field(path, m_where, raw, "end", int)
        if not 0 <= start < end <= len(text):
            raise FormatError(path, m_where, f"span {start}-{end} outside the text (length {len(text)})")
        given = raw.get("text")
        if given is not None and given != text[start:end]:
            raise FormatError(path, m_where, f"span {start}-{end} reads {text[start:end]!r} in the text, the line says {given!r}")
        links: list[LinkRecord] = []
        origins: dict[int, str] = {}  # part -> the origin of its first link
        for l_index, link in enumerate(_field(path, m_where, raw, "links", list, [])):
            l_where = f"{m_where}: link {l_index + 1}"
            if not isinstance(link, dict):
                raise FormatError(path, l_where, "a link must be an object")
            nil = bool(_field(path, l_where, link, "nil", bool, False))
            concept_id = str(_field(path, l_where, link, "concept_id", (str, type(None)), "") or "")
            if not nil and not concept_id:
                raise FormatError(path, l_where, "a link needs a concept_id or nil: true")
            part = _field(path, l_where, link, "part", int, 0)
            origin = str(link.get("origin") or "")
            if part in origins and origin and origins[part] and origin != origins[part]:
                continue  # an export of gold and curator links both (links=all): the part's first (gold) is kept
            origins.setdefault(part, origin)
            links.append(LinkRecord(part=part, concept_id=concept_id, nil=nil))
        raw_parts = _field(path, m_where, raw, "part_texts", list, [])
        if not all(isinstance(t, str) for t in raw_parts):
            raise FormatError(path, m_where, "field 'part_texts' must be a list of texts")
        part_texts = tuple(str(t) for t in raw_parts)
        mention_type = _field(path, m_where, raw, "type", str, "")
        mentions.append(MentionRecord(start, end, text[start:end], mention_type, tuple(links), part_texts, where=m_where))
    return DocumentRecord(str(doc_id), text, title, mentions, metadata, where)


_MISSING = object()


def _field(path: str | Path, where: str, obj: dict[str, Any], key: str, kind: Any, default: Any = _MISSING) -> Any:
    value = obj.get(key, _MISSING)
    if value is _MISSING or (value is None and default is not _MISSING):
        if default is _MISSING:
            raise FormatError(path, where, f"missing field {key!r}")
        return default
    # bool is an int in Python; an offset given as true/false is an error, not 1/0.
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in kinds):
        raise FormatError(path, where, f"field {key!r} has the wrong type ({type(value).__name__})")
    return value


def write_jsonl(documents: Iterable[DocumentRecord]) -> str:
    return "".join(stream_jsonl(documents))


def stream_jsonl(documents: Iterable[DocumentRecord]) -> Iterator[str]:
    """The file a line (a document) at a time: an export streams it (:mod:`webapp.curation.export`)."""
    for doc in documents:
        obj = {
            "id": doc.external_id,
            "title": doc.title,
            "text": doc.text,
            "metadata": doc.metadata,
            "mentions": [_mention_object(m) for m in doc.mentions],
        }
        yield json.dumps(obj, ensure_ascii=False) + "\n"


def _mention_object(m: MentionRecord) -> dict[str, Any]:
    out: dict[str, Any] = {
        "start": m.start,
        "end": m.end,
        "text": m.text,
        "type": m.mention_type,
        "status": m.status,
        "part_texts": list(m.part_texts),
        "links": [
            {
                "part": link.part,
                "concept_id": link.concept_id,
                "nil": link.nil,
                "origin": link.origin,
                "score": link.score,
                "model_version": link.model_version,
                "decided_by": link.decided_by or None,
                "decided_at": link.decided_at.isoformat() if link.decided_at else None,
                "decided_via": link.decided_via or None,
            }
            for link in m.links
        ],
    }
    if m.adjudication is not None:  # a project's document: the span's state in team curation
        out["adjudication"] = m.adjudication.state
        if m.adjudication.state != ADJUDICATION_OPEN:
            out["adjudicator"] = m.adjudication.adjudicator or None
            out["chosen_annotator"] = m.adjudication.chosen_annotator or None
            out["annotator_labels"] = dict(m.adjudication.annotator_labels)
    return out
