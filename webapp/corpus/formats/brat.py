"""brat standoff: one ``NAME.txt`` and ``NAME.ann`` per document, in a folder or a zip archive.

``T1<TAB>Disease 10 23<TAB>text`` is a mention (``10 23;30 35`` for a discontinuous one: its span is
taken from the first start to the last end), ``N1<TAB>Reference T1 MESH:D012345<TAB>name`` its concept;
several ``N`` lines for one ``T`` are the parts of a composite, in order. brat has no NIL: a mention
without a Reference line is read (and written) without a link. Offsets count characters of the .txt file
exactly as stored (line breaks included); other annotation kinds (R, E, A, #) are skipped.
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath

from webapp.core import limits
from webapp.corpus.formats.records import DocumentRecord, FormatError, LinkRecord, MentionRecord

# ASCII: Python's \d also matches other scripts' digits ("٣"), which int() would read as offsets.
_TEXT_BOUND = re.compile(r"^(T\d+)\t(\S+) (\d+ \d+(?:;\d+ \d+)*)\t(.*)$", re.ASCII)
_REFERENCE = re.compile(r"^(N\d+)\tReference (T\d+) (\S+)(?:\t.*)?$")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def read_brat(path: str | Path) -> Iterator[DocumentRecord]:
    """Documents of a folder or a ``.zip`` of ``.txt`` files with their ``.ann`` beside them."""
    path = Path(path)
    for name, text, ann in _pairs(path):
        yield _document(f"{path.name}/{name}" if path.is_dir() or path.suffix == ".zip" else name, PurePosixPath(name).stem, text, ann)


def _pairs(path: Path) -> Iterator[tuple[str, str, str | None]]:
    """(txt name, text, ann text or None)."""
    if path.is_dir():
        for txt in sorted(path.rglob("*.txt")):
            ann = txt.with_suffix(".ann")
            yield str(txt.relative_to(path)), _decode(path, txt.name, txt.read_bytes()), (
                _decode(path, ann.name, ann.read_bytes()) if ann.is_file() else None
            )
        return
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise FormatError(path, "", f"expected a zip archive of .txt and .ann files ({exc})") from exc
    with archive:
        # A zip bomb (a few hundred KB that inflate to GBs) is refused on the sizes its members declare,
        # before a byte is inflated; the budget then counts what reading really inflates.
        limits.check_zip(path, archive)
        budget = limits.ByteBudget(path)
        names = set(archive.namelist())
        for name in sorted(n for n in names if n.endswith(".txt") and not n.startswith("__MACOSX/")):
            ann = name[:-4] + ".ann"
            yield name, _decode(path, name, _member(path, archive, name, budget)), (
                _decode(path, ann, _member(path, archive, ann, budget)) if ann in names else None
            )


def _member(path: Path, archive: zipfile.ZipFile, name: str, budget: limits.ByteBudget) -> bytes:
    try:
        return budget.read(archive, name)
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:  # a damaged member, or a CRC that does not match
        raise FormatError(path, name, f"damaged zip member ({exc})") from exc
    except (NotImplementedError, RuntimeError) as exc:  # an unsupported compression method, an encrypted member
        raise FormatError(path, name, f"cannot read the zip member ({exc})") from exc


def _decode(path: Path, name: str, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise FormatError(path, f"{name}: line {line}", f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc


def _document(where: str, external_id: str, text: str, ann: str | None) -> DocumentRecord:
    if not external_id:
        raise FormatError(where, "", "a .txt file without a name")
    spans: dict[str, tuple[int, int, str, int]] = {}
    references: dict[str, list[str]] = {}
    ann_where = where[:-4] + ".ann"
    for lineno, line in enumerate((ann or "").splitlines(), start=1):
        if not line.strip():
            continue
        if line.startswith("T"):
            m = _TEXT_BOUND.match(line)
            if not m:
                raise FormatError(ann_where, f"line {lineno}", "expected 'T<n><TAB>Type start end[;start end]<TAB>text'")
            tid, mention_type, ranges, quoted = m.groups()
            try:
                pairs = [tuple(int(x) for x in r.split()) for r in ranges.split(";")]
            except ValueError:  # more digits than Python converts (4,300): far past any text's end anyway
                raise FormatError(ann_where, f"line {lineno}", f"span {ranges[:40]}... outside the text (length {len(text)})") from None
            start, end = min(p[0] for p in pairs), max(p[1] for p in pairs)
            if not 0 <= start < end <= len(text):
                raise FormatError(ann_where, f"line {lineno}", f"span {start}-{end} outside the text (length {len(text)})")
            if len(pairs) == 1 and _quoted(text, start, end) != quoted:
                raise FormatError(ann_where, f"line {lineno}", f"span {start}-{end} reads {text[start:end]!r} in the text, the file says {quoted!r}")
            if tid in spans:
                raise FormatError(ann_where, f"line {lineno}", f"{tid} is defined twice")
            spans[tid] = (start, end, mention_type, lineno)
        elif line.startswith("N"):
            m = _REFERENCE.match(line)
            if not m:
                raise FormatError(ann_where, f"line {lineno}", "expected 'N<n><TAB>Reference T<n> DB:ID<TAB>name'")
            references.setdefault(m.group(2), []).append(m.group(3))
    missing = [t for t in references if t not in spans]
    if missing:
        raise FormatError(ann_where, "", f"Reference to {missing[0]}, which is not a text-bound annotation of the file")
    mentions = [
        MentionRecord(
            start,
            end,
            text[start:end],
            mention_type,
            tuple(LinkRecord(part=i, concept_id=cid) for i, cid in enumerate(references.get(tid, []))),
            where=f"{ann_where}: line {lineno}",
        )
        for tid, (start, end, mention_type, lineno) in spans.items()
    ]
    mentions.sort(key=lambda m: (m.start, m.end))
    return DocumentRecord(external_id, text, "", mentions, {}, where)


def safe_name(external_id: str) -> str:
    return _UNSAFE.sub("_", external_id) or "document"


def file_names(documents: Iterable[DocumentRecord]) -> Iterator[tuple[str, DocumentRecord]]:
    """Each document with the stem of its files in an archive: its id made safe, ``_2``, ``_3`` ... on a repeat."""
    used: set[str] = set()
    for doc in documents:
        name = safe_name(doc.external_id)
        base, n = name, 1
        while name in used:
            n += 1
            name = f"{base}_{n}"
        used.add(name)
        yield name, doc


def write_brat(documents: Iterable[DocumentRecord]) -> bytes:
    """A zip archive with ``ID.txt`` and ``ID.ann`` for each document."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, doc in file_names(documents):
            archive.writestr(f"{name}.txt", doc.text.encode("utf-8"))
            archive.writestr(f"{name}.ann", ann_text(doc).encode("utf-8"))
    return buffer.getvalue()


def ann_text(doc: DocumentRecord) -> str:
    lines: list[str] = []
    n_ref = 0
    for index, m in enumerate(doc.mentions, start=1):
        mention_type = m.mention_type.replace(" ", "_") or "Mention"
        # Line breaks inside a span are written as a discontinuous annotation around them, as brat does.
        lines.append(f"T{index}\t{mention_type} {_ranges(doc.text, m.start, m.end)}\t{_quoted(doc.text, m.start, m.end)}")
        for link in m.links:
            if link.nil or not link.concept_id:
                continue
            n_ref += 1
            lines.append(f"N{n_ref}\tReference T{index} {link.concept_id}\t{link.concept_id}")
    return "\n".join(lines) + ("\n" if lines else "")


def _ranges(text: str, start: int, end: int) -> str:
    pieces: list[tuple[int, int]] = []
    s = start
    for i in range(start, end):
        if text[i] in "\r\n":
            if s < i:
                pieces.append((s, i))
            s = i + 1
    if s < end:
        pieces.append((s, end))
    pieces = pieces or [(start, end)]
    if pieces[0][0] != start or pieces[-1][1] != end:
        pieces = [(start, end)]  # a span that starts or ends on a line break: kept whole
    return ";".join(f"{a} {b}" for a, b in pieces)


def _quoted(text: str, start: int, end: int) -> str:
    return text[start:end].replace("\r", " ").replace("\n", " ")
