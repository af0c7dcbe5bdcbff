"""Reading a file of documents a document at a time, plain or gzip-compressed: what the streamed readers share.

BioC XML (:func:`lxml.etree.iterparse`), BioC JSON and PubAnnotation (:mod:`ijson`, an incremental JSON parser),
JSON Lines (a line at a time) and PubMed XML never hold more than the document being read; an import commits them a
batch at a time (:mod:`webapp.corpus.batch_import`) and records each record's position (the count of documents
read up to it) so that an import cut short continues where it stopped.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

import ijson

from linker.textfiles import undecodable_line
from webapp.corpus.formats.records import (
    MAX_METADATA_DEPTH,
    DocumentRecord,
    FormatError,
    deep_json_keys,
    unstorable_character,
)

__all__ = ["Positioned", "open_binary", "positioned", "count_needles", "json_values", "first_byte", "not_utf8_bytes",
           "diagnose_json",
           "check_storable"]

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


def json_values(
    path: str | Path, fh: IO[bytes], prefix: str, *, multiple: bool = False,
    diagnose: Callable[[FormatError], None] | None = None,
) -> Iterator[Any]:
    """The JSON values at ``prefix`` (``documents.item``: each of a collection's documents; ``item``: each of a
    top-level array's; ``""``: each top-level value, with ``multiple`` one a line), one at a time, built from the
    parser's events (:func:`ijson.basic_parse`); numbers with a fraction as floats, integers ints. A syntax error or
    a nesting deeper than :data:`MAX_JSON_DEPTH` is a :class:`FormatError` naming the file and the document, unless
    ``diagnose`` (given it first: :func:`diagnose_json`) raises a more precise one."""
    want = [part for part in prefix.split(".") if part]
    read = 0
    try:
        guarded = _SurrogateGuard(path, fh)
        for value in _select(path, ijson.basic_parse(guarded, use_float=True, multiple_values=multiple), want):
            read += 1
            yield value
    except FormatError as exc:  # nested too deeply, a lone surrogate
        if diagnose:
            diagnose(exc)
        raise
    except ijson.JSONError as exc:
        found = undecodable_line(path) if "UTF8" in str(exc) else None
        if found:
            refusal = FormatError(path, f"line {found[0]}", f"not UTF-8 text ({found[1]})")
        else:
            message = (str(exc).strip().splitlines() or [type(exc).__name__])[0].removeprefix("b'")
            short = "; cut short?" if "premature EOF" in message else ""
            refusal = FormatError(path, f"document #{read + 1}" if read else "", f"not JSON ({message}){short}")
        if diagnose:
            diagnose(refusal)
        raise refusal from exc
    except UnicodeDecodeError as exc:
        refusal = not_utf8_bytes(path, f"document #{read + 1}", exc)
        if diagnose:
            diagnose(refusal)
        raise refusal from exc
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise FormatError(path, "", f"the gzip stream is damaged or cut short ({exc})") from exc


# A JSON escape of a UTF-16 surrogate; a high one followed by a low one is a character (an emoji), alone it is half
# of one, which ijson's C parser (yajl) turns into "?" or another character, or fails on.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LOW_ESCAPE = re.compile(rb"\\u[dD][c-fC-F][0-9a-fA-F]{2}")
_PAIR = 12  # bytes of an escaped surrogate pair


class _SurrogateGuard:
    """The file's bytes as the JSON parser reads them, refusing a lone surrogate escape (``"\\ud800"``) by its line
    before the parser reads it; counting lines on the way. The last bytes of each read are held back for the next,
    so an escape cut by a read's end is seen whole."""

    def __init__(self, path: str | Path, fh: IO[bytes]) -> None:
        self.path, self.fh = path, fh
        self.held = b""  # read, not given yet
        self.before = b""  # the last bytes given: the backslashes an escape in the next read may follow
        self.start = 0  # where in ``held`` to scan from (past a pair that the last scan met)
        self.line = 1  # of the first byte of ``held``

    def read(self, size: int = -1) -> bytes:
        if size == 0:  # ijson's probe of the type read gives
            return b""
        while True:
            chunk = self.fh.read(size if size and size > 0 else 1 << 16)
            data = self.held + chunk
            end = max(len(data) - _PAIR, 0) if chunk else len(data)
            self._scan(data, end)
            self.line += data.count(b"\n", 0, end)
            self.held, given = data[end:], data[:end]
            self.before = (self.before + given[-32:])[-32:]
            if given or not chunk:
                return given

    def _scan(self, data: bytes, end: int) -> None:
        at = self.start
        while (found := _SURROGATE_ESCAPE.search(data, at)) and found.start() < end:
            at = found.end()
            lead = (self.before if found.start() < 32 else b"") + data[max(found.start() - 32, 0) : found.start()]
            if (len(lead) - len(lead.rstrip(b"\\"))) % 2:  # the backslash is itself escaped: text, not an escape
                continue
            if found.group()[3:4] in b"89abAB" and _LOW_ESCAPE.match(data, at):
                at += 6
                continue
            line = self.line + data.count(b"\n", 0, found.start())
            escape = found.group().decode("ascii")
            raise FormatError(self.path, f"line {line}", f"a string holds a lone surrogate ({escape}): half a character, "
                              "which no UTF-8 text can hold")
        self.start = max(at - end, 0)  # what was read past stays read past in the bytes held


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


# The most a file refused by the streamed JSON reader may hold for :func:`diagnose_json` to read it whole.
WHOLE_FILE_BYTES = 64 << 20
_BLANKS = re.compile(r"[ \t\n\r]*")


def diagnose_json(
    path: str | Path, label: str, check: Callable[[list[Any]], None], streamed: FormatError, *, multiple: bool = False
) -> None:
    """Say precisely why a file the streamed reader refused as a whole is not what it should be (a syntax error, the
    wrong top-level value, a nesting too deep, a NaN that ijson refuses and :mod:`json` reads): read it whole, when it
    is no larger than :data:`WHOLE_FILE_BYTES`, as :func:`json.loads` does (``multiple``: one value after another),
    and raise the refusal naming the line of the first bytes that are not UTF-8, of the syntax error (``label``:
    ``not BioC JSON`` ...; after the document ``streamed``, the streamed refusal, named, and whether the file looks
    cut short) or of the nesting too deep, or what ``check`` (the reader's check of the values) raises naming the
    document and field. Returns when that finds nothing, or the file is too large: ``streamed`` then stands."""
    try:
        with open_binary(path) as fh:
            data = fh.read(WHOLE_FILE_BYTES + 1)
    except (OSError, EOFError, zlib.error):
        return
    if len(data) > WHOLE_FILE_BYTES:
        return
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise not_utf8_bytes(path, "", exc) from None
    try:
        values = _all_values(text) if multiple else [json.loads(text)]
    except RecursionError:
        line, keys = deep_json_keys(text) or (0, [])
        field = f"field {'.'.join(keys)!r}" if keys else "the JSON"
        raise FormatError(path, f"line {line}" if line else "", f"{field} is nested too deeply (more than {MAX_METADATA_DEPTH} levels)") from None
    except json.JSONDecodeError as exc:
        document = streamed.where if streamed.where.startswith("document") else ""
        short = "; cut short?" if streamed.message.endswith("cut short?") else ""
        raise FormatError(path, ", ".join(filter(None, (document, f"line {exc.lineno}"))), f"{label} ({exc}){short}") from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise FormatError(path, "", f"{label} ({exc})") from None
    check(values)


def _all_values(text: str) -> list[Any]:
    """The JSON values of ``text`` one after another (JSON lines); an empty text is a syntax error at line 1."""
    decoder, values = json.JSONDecoder(), []
    at = _past_blanks(text, 0)
    while at < len(text) or not values:
        value, at = decoder.raw_decode(text, at)
        values.append(value)
        at = _past_blanks(text, at)
    return values


def _past_blanks(text: str, at: int) -> int:
    blanks = _BLANKS.match(text, at)
    return blanks.end() if blanks else at


def check_storable(path: str | Path, record: DocumentRecord, raw: Any) -> None:
    """Refuse, naming the field, a record (read from ``raw``, its JSON) holding what the database cannot store (a
    lone surrogate, a NUL): what an import refuses record by record, for :func:`diagnose_json`'s checks."""
    for name, value in (("id", record.external_id), ("title", record.title), ("text", record.text), ("metadata", record.metadata)):
        bad = unstorable_character(value)
        if bad:
            raise FormatError(path, record.where, f"field {name!r} contains {bad}")
    bad = unstorable_character(raw)
    if bad:
        raise FormatError(path, record.where, f"a field contains {bad}")
