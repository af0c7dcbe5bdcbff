"""Reading a file of documents a document at a time, plain or gzip-compressed: what the streamed readers share.

BioC XML (:func:`lxml.etree.iterparse`), BioC JSON and PubAnnotation (:mod:`ijson`, an incremental JSON parser),
JSON Lines (a line at a time) and PubMed XML never hold more than the document being read; an import commits them a
batch at a time (:mod:`webapp.corpus.batch_import`) and records each record's position (the count of documents
read up to it) so that an import cut short continues where it stopped.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

import ijson

from linker.textfiles import undecodable_line
from webapp.corpus.formats.records import DocumentRecord, FormatError

__all__ = ["Positioned", "open_binary", "positioned", "count_needles", "json_values", "first_byte", "not_utf8_bytes"]

_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Positioned:
    """A record and its position in its file: the count of top-level items read up to and with it."""

    record: DocumentRecord
    position: int


def open_binary(path: str | Path) -> IO[bytes]:
    """The file's bytes, un-gzipped when it is gzip (told by its first bytes, whatever its name)."""
    with open(path, "rb") as fh:
        magic = fh.read(2)
    return cast(IO[bytes], gzip.open(path, "rb") if magic == _GZIP_MAGIC else open(path, "rb"))


def positioned(records: Iterable[DocumentRecord]) -> Iterator[Positioned]:
    return (Positioned(record, n) for n, record in enumerate(records, start=1))


def count_needles(path: str | Path, needles: tuple[bytes, ...]) -> int | None:
    """How many times the needles occur in the file's bytes (un-gzipped), by a scan in chunks: a progress bar's
    total, never the file whole. None when the file cannot be read (the reader will say why)."""
    count, tail, keep = 0, b"", max(len(n) for n in needles) - 1
    try:
        with open_binary(path) as fh:
            while chunk := fh.read(1 << 20):
                window = tail + chunk
                count += sum(window.count(n) for n in needles)
                tail = window[-keep:] if keep else b""  # a needle cut by the chunk's end is counted with the next one ...
                count -= sum(tail.count(n) for n in needles)  # ... and not twice
    except (OSError, EOFError, zlib.error):
        return None
    return count


def first_byte(fh: IO[bytes]) -> bytes:
    """The first byte that is not white space (a byte-order mark read past), without consuming it."""
    peek = getattr(fh, "peek", None)
    head = peek(64) if peek else b""
    if head.startswith(_BOM):
        fh.read(3)
        head = head[3:]
    stripped = head.lstrip()
    while not stripped and head:  # only white space so far
        fh.read(len(head))
        head = peek(64) if peek else b""
        stripped = head.lstrip()
    return stripped[:1]


# How deep a streamed JSON file may nest anywhere: a document's metadata may nest MAX_METADATA_DEPTH levels (checked
# with the document), under the few levels of a BioC collection and document.
MAX_JSON_DEPTH = 256


def json_values(path: str | Path, fh: IO[bytes], prefix: str, *, multiple: bool = False) -> Iterator[Any]:
    """The JSON values at ``prefix`` (``documents.item``: each of a collection's documents; ``item``: each of a
    top-level array's; ``""``: each top-level value, with ``multiple`` one a line), one at a time, built from the
    parser's events (:func:`ijson.basic_parse`); numbers with a fraction as floats, integers ints. A syntax error or
    a nesting deeper than :data:`MAX_JSON_DEPTH` is a :class:`FormatError` naming the file and the document."""
    want = [part for part in prefix.split(".") if part]
    read = 0
    try:
        for value in _select(path, ijson.basic_parse(fh, use_float=True, multiple_values=multiple), want):
            read += 1
            yield value
    except ijson.JSONError as exc:
        found = undecodable_line(path) if "UTF8" in str(exc) else None
        if found:
            raise FormatError(path, f"line {found[0]}", f"not UTF-8 text ({found[1]})") from exc
        message = (str(exc).strip().splitlines() or [type(exc).__name__])[0].removeprefix("b'")
        short = "; cut short?" if "premature EOF" in message else ""
        raise FormatError(path, f"document #{read + 1}" if read else "", f"not JSON ({message}){short}") from exc
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise FormatError(path, "", f"the gzip stream is damaged or cut short ({exc})") from exc


def _select(path: str | Path, events: Iterator[tuple[str, Any]], want: list[str]) -> Iterator[Any]:
    names: list[str | None] = []  # per open container, its name in its parent (a key, "item"; None at the top)
    arrays: list[bool] = []  # per open container: an array (else an object)
    key = ""
    builder: ijson.ObjectBuilder | None = None
    depth = 0  # of the value being built
    selected = 0  # values yielded
    for event, value in events:
        if builder is not None:
            builder.event(event, value)
            if event in ("start_map", "start_array"):
                depth += 1
                if depth + len(arrays) > MAX_JSON_DEPTH:
                    _too_deep(path, [], f"document #{selected + 1}")
            elif event in ("end_map", "end_array"):
                depth -= 1
            if depth == 0:
                selected += 1
                yield builder.value
                builder = None
            continue
        if event == "map_key":
            key = value
            continue
        if event in ("end_map", "end_array"):
            arrays.pop()
            names.pop()
            continue
        name = None if not arrays else ("item" if arrays[-1] else key)
        if len(arrays) == len(want) and [n for n in names if n is not None] + ([name] if name else []) == want:
            builder = ijson.ObjectBuilder()
            builder.event(event, value)
            if event in ("start_map", "start_array"):
                depth = 1
            else:
                selected += 1
                yield builder.value
                builder = None
            continue
        if event in ("start_map", "start_array"):
            if len(arrays) >= MAX_JSON_DEPTH:
                _too_deep(path, names, "")
            arrays.append(event == "start_array")
            names.append(name)


def _too_deep(path: str | Path, names: list[str | None], where: str) -> None:
    dotted = ".".join(n for n in names[:6] if n is not None)
    field = f"field {dotted!r}" if dotted else "the JSON"
    raise FormatError(path, where, f"{field} is nested too deeply (more than {MAX_JSON_DEPTH} levels)")


def not_utf8_bytes(path: str | Path, where: str, exc: UnicodeDecodeError) -> FormatError:
    """The refusal of bytes that are not UTF-8, naming the line of the file's first undecodable bytes."""
    found = undecodable_line(path)
    if found:
        return FormatError(path, f"line {found[0]}", f"not UTF-8 text ({found[1]})")
    return FormatError(path, where, f"not UTF-8 text ({exc.reason})")
