"""Plain text: a ``.txt`` file is one document; a ``.zip`` or ``.tar.gz`` of ``.txt`` files, one per file.

The document's id is the file's stem (``notes/case-12.txt`` -> ``case-12``); its title is its first non-empty
line when that line is short (a heading), else empty (the text is not cut: offsets count the text as stored).
Nothing is annotated: the documents go to mention detection (:mod:`webapp.corpus.detection`).

Text extracted from a PDF is cleaned up before it is stored, and only in ways that keep it the same text:
CRLF (and a lone CR) becomes LF, a form feed (a page break) a blank line, soft hyphens go, and a word
hyphenated across a line break (``dis-\\nease``, lower-case letters on both sides) is joined again; every other
line break is kept. A binary file (a NUL byte) or one that is not UTF-8 is refused with the file, the line and
the byte offset named. Export writes one ``ID.txt`` per document in a zip (the text as stored, no annotations).
"""

from __future__ import annotations

import io
import re
import tarfile
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath

from webapp.core import limits
from webapp.corpus.formats.brat import file_names
from webapp.corpus.formats.records import DocumentRecord, FormatError

__all__ = ["clean_text", "read_text", "write_text", "TITLE_MAX_CHARS"]

TITLE_MAX_CHARS = 200  # a first line longer than this is a paragraph, not a title
_SOFT_HYPHEN = "\u00ad"
# "dis-\nease": a lower-case letter, a hyphen, one line break (and the blanks PDF extraction leaves around it),
# a lower-case letter. A capital on either side ("COVID-\n19", "Parkinson-\nLike") is left as written.
_HYPHENATED = re.compile(r"(?<=[^\W\d_])-[ \t]*\n[ \t]*(?=[^\W\d_])")
# A soft hyphen is where a line may break inside a word: where one did, the word is joined again.
_SOFT_BREAK = re.compile("\u00ad[ \t]*\n[ \t]*")


def clean_text(text: str) -> str:
    """PDF-extracted text as stored: line breaks as LF, page breaks as blank lines, words re-joined."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _SOFT_BREAK.sub("", text.replace("\f", "\n\n")).replace(_SOFT_HYPHEN, "")
    return _HYPHENATED.sub(_join_if_lower, text)


def _join_if_lower(match: re.Match[str]) -> str:
    text = match.string
    before, after = text[match.start() - 1], text[match.end()]
    return "" if before.islower() and after.islower() else match.group()


def read_text(path: str | Path) -> Iterator[DocumentRecord]:
    """Documents of a ``.txt`` file, a folder of them, or a ``.zip`` / ``.tar.gz`` archive of them."""
    path = Path(path)
    name = path.name.lower()
    if path.is_dir():
        members: Iterable[tuple[str, bytes]] = (
            (str(p.relative_to(path)), p.read_bytes()) for p in sorted(path.rglob("*.txt")) if p.is_file()
        )
    elif name.endswith(".zip"):
        members = _zip_members(path)
    elif name.endswith((".tar.gz", ".tgz")):
        members = _tar_members(path)
    else:
        yield _document(path, path.name, path.read_bytes(), where=path.name)
        return
    count = 0
    for member, data in members:
        count += 1
        yield _document(path, member, data, where=f"{path.name}/{member}")
    if not count:
        raise FormatError(path, "", "no .txt files in the archive")


def _zip_members(path: Path) -> Iterator[tuple[str, bytes]]:
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise FormatError(path, "", f"expected a zip archive of .txt files ({exc})") from exc
    with archive:
        limits.check_zip(path, archive)  # declared sizes first: a zip bomb is refused before a byte is inflated
        budget = limits.ByteBudget(path)
        for member in sorted(n for n in archive.namelist() if _is_text_member(n)):
            try:
                yield member, budget.read(archive, member)
            except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
                raise FormatError(path, member, f"damaged zip member ({exc})") from exc
            except (NotImplementedError, RuntimeError) as exc:  # an unsupported compression method, an encrypted member
                raise FormatError(path, member, f"cannot read the zip member ({exc})") from exc


def _tar_members(path: Path) -> Iterator[tuple[str, bytes]]:
    # The gzip stream as a whole was bounded by limits.check_gzip (webapp.core.inputs.input_path); the members'
    # declared sizes and the bytes really read are bounded here too.
    max_bytes, used = limits.limit(limits.DECOMPRESSED_BYTES), 0
    try:
        with tarfile.open(path, "r:*") as archive:
            members = sorted((m for m in archive.getmembers() if m.isfile() and _is_text_member(m.name)), key=lambda m: m.name)
            for info in members:
                if len(info.name) > limits.limit(limits.PATH_CHARS):
                    raise limits.LimitExceeded(f"{path}: " + limits.over(
                        f"a member name ({info.name[:60]!r}...) is", len(info.name), limits.PATH_CHARS, "characters"))
                used += info.size
                if used > max_bytes:
                    raise limits.LimitExceeded(
                        f"{path}: {info.name} takes the archive past the {max_bytes:,}-byte limit ({limits.DECOMPRESSED_BYTES})")
                handle = archive.extractfile(info)
                yield info.name, handle.read() if handle is not None else b""
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        raise FormatError(path, "", f"expected a .tar.gz archive of .txt files ({exc})") from exc


def _is_text_member(name: str) -> bool:
    return name.lower().endswith(".txt") and not name.startswith("__MACOSX/") and not PurePosixPath(name).name.startswith(".")


def _document(path: Path, member: str, data: bytes, *, where: str) -> DocumentRecord:
    text = clean_text(_decode(path, member, data))
    external_id = PurePosixPath(member).stem
    if not external_id:
        raise FormatError(path, member, "a .txt file without a name")
    if not text.strip():
        raise FormatError(path, member if member != path.name else "", "the file holds no text (empty, or only blanks)")
    return DocumentRecord(external_id, text, _title(text), [], {}, where)


def _decode(path: Path, member: str, data: bytes) -> str:
    """UTF-8 text (a byte-order mark dropped), or a refusal naming the file, the line and the byte."""
    where = "" if member == path.name else member
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise FormatError(path, f"{where + ': ' if where else ''}line {line}",
                          f"a NUL byte at byte {nul:,}: a binary file, not plain text (extract the text of a PDF first)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
        at = exc.start + bom
        line = data.count(b"\n", 0, at) + 1
        raise FormatError(path, f"{where + ': ' if where else ''}line {line}",
                          f"not UTF-8 text ({exc.reason} at byte {at:,})") from exc


def _title(text: str) -> str:
    """The first non-empty line when it is short enough to be a heading, and the text begins with it (offsets
    count the text, so the title is a prefix of it, as in every other format)."""
    first = text.lstrip().split("\n", 1)[0].strip()
    if not first or len(first) > TITLE_MAX_CHARS or not text.startswith(first):
        return ""
    return first


def write_text(documents: Iterable[DocumentRecord]) -> bytes:
    """A zip archive with one ``ID.txt`` per document: the text as stored, without annotations."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, doc in file_names(documents):
            archive.writestr(f"{name}.txt", doc.text.encode("utf-8"))
    return buffer.getvalue()
