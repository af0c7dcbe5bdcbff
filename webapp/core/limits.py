"""Size limits on what an import reads: uploads, archives, documents, offsets and paths.

Each limit is a setting (``IMPORT_MAX_*``, from the environment: see docs/configuration.md),
read at call time so that a test or a deployment can change it. A refusal names the file or record at
fault, the amount, the limit and the setting that holds it::

    brat.zip: doc1.txt expands to 314,572,800 bytes, over the 50,000,000-byte limit (IMPORT_MAX_DECOMPRESSED_BYTES)

Refusals are :class:`ValueError` subclasses, which every caller (API, commands, import jobs) already turns
into a 400, a ``CommandError`` or a failed job, before anything is written.

Why the archive checks look twice: the sizes a zip declares (``ZipInfo.file_size``) are checked before
anything is extracted, so a bomb is refused without inflating a byte; the reading itself then counts the
bytes it really gets, so a member whose header understates its size is stopped at the limit too.
"""

from __future__ import annotations

import gzip
import zipfile
import zlib
from pathlib import Path

from django.conf import settings

UPLOAD_BYTES = "IMPORT_MAX_UPLOAD_BYTES"
DECOMPRESSED_BYTES = "IMPORT_MAX_DECOMPRESSED_BYTES"
COMPRESSION_RATIO = "IMPORT_MAX_COMPRESSION_RATIO"
DOCUMENT_CHARS = "IMPORT_MAX_DOCUMENT_CHARS"
PATH_CHARS = "IMPORT_MAX_PATH_CHARS"

# The compression ratio is only judged past this size: a small member may compress far better than text
# usually does (a file of blanks) and still costs nothing to inflate.
RATIO_FLOOR_BYTES = 1 << 20
_CHUNK = 1 << 16


class LimitExceeded(ValueError):
    """An input over one of the configured limits; the message names the input, the limit and its setting."""


def limit(name: str) -> int:
    return int(getattr(settings, name))


def over(subject: str, amount: int, name: str, unit: str) -> str:
    """``"doc1.txt expands to 314,572,800 bytes, over the 50,000,000-byte limit (IMPORT_MAX_DECOMPRESSED_BYTES)"``."""
    singular = unit[:-1] if unit.endswith("s") else unit
    return f"{subject} {amount:,} {unit}, over the {limit(name):,}-{singular} limit ({name})"


def check_path(path: str | Path) -> None:
    """A path an import is given (a server path in an import job or a command) is at most IMPORT_MAX_PATH_CHARS."""
    text = str(path)
    if len(text) > limit(PATH_CHARS):
        raise LimitExceeded(over(f"the path {text[:60]!r}... is", len(text), PATH_CHARS, "characters"))


def document_chars_over(subject: str, amount: int) -> str | None:
    """The refusal for a document text (or an offset into one) of ``amount`` characters, or None when it fits:
    ``document_chars_over("the text is", n)`` -> ``"the text is 12,000,000 characters, over the ..."``."""
    return over(subject, amount, DOCUMENT_CHARS, "characters") if amount > limit(DOCUMENT_CHARS) else None


# --- archives ------------------------------------------------------------------------------------------


def check_zip(path: str | Path, archive: zipfile.ZipFile) -> None:
    """Refuse an archive whose members declare more than the limits, before extracting any of them."""
    total = 0
    max_bytes, max_ratio = limit(DECOMPRESSED_BYTES), limit(COMPRESSION_RATIO)
    for info in archive.infolist():
        if len(info.filename) > limit(PATH_CHARS):
            raise LimitExceeded(f"{path}: " + over(f"a member name ({info.filename[:60]!r}...) is", len(info.filename), PATH_CHARS, "characters"))
        if info.file_size > max_bytes:
            raise LimitExceeded(f"{path}: " + over(f"{info.filename} expands to", info.file_size, DECOMPRESSED_BYTES, "bytes"))
        if info.file_size > RATIO_FLOOR_BYTES and info.file_size > max_ratio * max(info.compress_size, 1):
            ratio = info.file_size // max(info.compress_size, 1)
            raise LimitExceeded(
                f"{path}: {info.filename} expands {ratio:,} times ({info.compress_size:,} bytes to "
                f"{info.file_size:,}), over the {max_ratio:,}-fold limit ({COMPRESSION_RATIO})"
            )
        total += info.file_size
    if total > max_bytes:
        raise LimitExceeded(f"{path}: " + over("its members expand to", total, DECOMPRESSED_BYTES, "bytes"))


class ByteBudget:
    """Counts the bytes really inflated from one archive, refusing past IMPORT_MAX_DECOMPRESSED_BYTES."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.used = 0

    def read(self, archive: zipfile.ZipFile, name: str) -> bytes:
        """The member's bytes, read in chunks; stops as soon as the archive's total passes the limit."""
        max_bytes = limit(DECOMPRESSED_BYTES)
        chunks: list[bytes] = []
        with archive.open(name) as fh:
            while chunk := fh.read(_CHUNK):
                self.used += len(chunk)
                if self.used > max_bytes:
                    raise LimitExceeded(
                        f"{self.path}: {name} takes the archive past the {max_bytes:,}-byte limit ({DECOMPRESSED_BYTES})"
                    )
                chunks.append(chunk)
        return b"".join(chunks)


def check_gzip(path: str | Path) -> None:
    """Refuse a ``.gz`` file that inflates past IMPORT_MAX_DECOMPRESSED_BYTES or the compression ratio.

    gzip keeps no trustworthy size up front (its trailer holds the size modulo 4 GiB), so the file is inflated
    once into nothing, counting; a damaged stream is left for the reader, which names its line.
    """
    path = Path(path)
    max_bytes, max_ratio = limit(DECOMPRESSED_BYTES), limit(COMPRESSION_RATIO)
    compressed = max(path.stat().st_size, 1)
    used = 0
    try:
        with gzip.open(path, "rb") as fh:
            while chunk := fh.read(_CHUNK):
                used += len(chunk)
                if used > max_bytes:
                    raise LimitExceeded(f"{path}: the file expands past the {max_bytes:,}-byte limit ({DECOMPRESSED_BYTES})")
    except (OSError, EOFError, zlib.error):
        return  # not gzip after all, or truncated: the reader reports it with its line
    if used > RATIO_FLOOR_BYTES and used > max_ratio * compressed:
        raise LimitExceeded(
            f"{path}: the file expands {used // compressed:,} times ({compressed:,} bytes to {used:,}), "
            f"over the {max_ratio:,}-fold limit ({COMPRESSION_RATIO})"
        )
