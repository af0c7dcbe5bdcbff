"""Opening the text files every reader reads: gzip by the name, UTF-8 with the line of the first bad byte,
and a damaged file refused as a :class:`linker.records.ParseError` naming the file and line."""

from __future__ import annotations

import gzip
import io
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from linker.records import ParseError

__all__ = ["open_text", "read_lines", "undecodable_line", "split_bars"]


def open_text(path: str | Path) -> IO[str]:
    """Open a text file, transparently un-gzipping ``*.gz``; UTF-8 with a clear error otherwise. A byte-order
    mark opening the file (Windows editors write one) is dropped: it would stick to the first field."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such file")
    if p.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(p, "rb"), encoding="utf-8-sig", newline="")
    return open(p, encoding="utf-8-sig", newline="")


def read_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """(1-based line number, line without its newline); decoding and gzip errors become ParseError."""
    lineno = 0
    try:
        with open_text(path) as fh:
            for lineno, raw in enumerate(fh, start=1):
                yield lineno, raw.rstrip("\r\n")
    except UnicodeDecodeError as exc:
        # The text layer decodes 8 KB ahead of the line being read: the line before it is not the culprit.
        found = undecodable_line(path)
        line, reason = found if found else (lineno + 1, exc.reason)
        raise ParseError(path, line, f"not UTF-8 text ({reason})") from exc
    except (EOFError, gzip.BadGzipFile, OSError, zlib.error) as exc:
        # zlib.error: a .gz file whose compressed data is damaged (not merely cut short, which is an EOFError).
        if isinstance(exc, FileNotFoundError):
            raise
        raise ParseError(path, lineno + 1, f"unreadable or truncated file ({exc})") from exc


def undecodable_line(path: str | Path) -> tuple[int, str] | None:
    """(1-based line, reason) of the first bytes of a file (un-gzipped if ``*.gz``) that are not UTF-8, or None.

    Read line by line as bytes: a newline byte is never part of a longer UTF-8 sequence, so each line decodes
    on its own, and the file is never held whole in memory.
    """
    p = Path(path)
    try:
        with gzip.open(p, "rb") if p.suffix == ".gz" else open(p, "rb") as fh:
            for number, raw in enumerate(fh, start=1):
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    return number, f"{exc.reason} at byte {exc.start + 1} of the line"
    except (EOFError, OSError, zlib.error):
        return None
    return None


def split_bars(value: str) -> tuple[str, ...]:
    """The items of a "|"-separated field, stripped, empty ones left out."""
    return tuple(v.strip() for v in value.split("|") if v.strip())
