"""The workbench's document formats by name, and :func:`guess_format`: a file's format from its name and first
bytes, for :meth:`Client.import_file <elwb_client.Client.import_file>` called without one."""

from __future__ import annotations

import gzip
import re
import zipfile
from pathlib import Path

FORMATS = ("pubtator", "bioc-xml", "bioc-json", "brat", "jsonl", "pubmed-xml", "pubannotation", "text")
_PUBTATOR_LINE = re.compile(rb"^[^|\s]+\|[ta]\|", re.MULTILINE)
_SNIFF = 64 * 1024


class UnknownFormat(ValueError):
    """The file's format could not be told from its name and content: pass ``format=`` (one of FORMATS)."""


def guess_format(path: str | Path) -> str:
    """The format of the file at ``path``, from its name and first bytes; :class:`UnknownFormat` naming the
    choices when they do not tell."""
    path = Path(path)
    name = path.name.lower()
    if name.endswith((".tar.gz", ".tgz")):
        return "text"
    if name.endswith(".gz"):
        with gzip.open(path, "rb") as fh:
            head = fh.read(_SNIFF)
    elif name.endswith(".zip"):
        return _zip_format(path)
    else:
        with open(path, "rb") as fh:
            head = fh.read(_SNIFF)
    found = _by_content(head, name)
    if found is None:
        raise UnknownFormat(f"cannot tell the format of {path.name}: pass format= one of {', '.join(FORMATS)}")
    return found


def _by_content(head: bytes, name: str) -> str | None:
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith(b"<"):
        if b"<PubmedArticle" in head or b"<DeleteCitation" in head:
            return "pubmed-xml"
        if b"<collection" in head:
            return "bioc-xml"
        return None
    if name.endswith((".jsonl", ".ndjson")):
        return "jsonl"
    if text.startswith(b"["):
        return "pubannotation"
    if text.startswith(b"{"):
        first_line = text.split(b"\n", 1)[0]
        if b'"documents"' in head and b'"passages"' in head:
            return "bioc-json"
        if first_line.rstrip().endswith(b"}") and b"\n{" in text:
            return "jsonl"  # several one-line objects
        if b'"denotations"' in head:
            return "pubannotation"
        return "jsonl" if first_line.rstrip().endswith(b"}") else None
    if _PUBTATOR_LINE.search(head):
        return "pubtator"
    if name.endswith(".txt"):
        return "text"
    return None


def _zip_format(path: Path) -> str:
    """brat when the archive has .ann files, text when it has only .txt files."""
    with zipfile.ZipFile(path) as archive:
        names = [n.lower() for n in archive.namelist() if not n.endswith("/")]
    if any(n.endswith(".ann") for n in names):
        return "brat"
    if names and all(n.endswith(".txt") for n in names):
        return "text"
    raise UnknownFormat(f"cannot tell the format of {path.name} (no .ann files, not only .txt files): pass format=")
