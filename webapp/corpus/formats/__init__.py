"""Interchange formats of the field, for documents with or without annotations.

Each module reads files into :class:`~webapp.corpus.formats.records.DocumentRecord` objects and writes
records back to text; :mod:`webapp.corpus.formats.services` moves records in and out of the database.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from webapp.corpus.formats.bioc import (
    read_bioc_json,
    read_bioc_xml,
    stream_bioc_xml,
    write_bioc_json,
    write_bioc_xml,
)
from webapp.corpus.formats.brat import read_brat, write_brat
from webapp.corpus.formats.jsonl import read_jsonl, stream_jsonl, write_jsonl
from webapp.corpus.formats.pubannotation import read_pubannotation, stream_pubannotation, write_pubannotation
from webapp.corpus.formats.pubmed import read_pubmed, write_pubmed
from webapp.corpus.formats.pubtator import read_pubtator, stream_pubtator, write_pubtator
from webapp.corpus.formats.records import DocumentRecord, FormatError, LinkRecord, MentionRecord
from webapp.corpus.formats.text import read_text, write_text

__all__ = ["FORMATS", "Format", "DocumentRecord", "MentionRecord", "LinkRecord", "FormatError", "get_format"]


@dataclass(frozen=True)
class Format:
    name: str
    label: str
    content_type: str
    extension: str  # of an exported file
    read: Callable[[str | Path], Iterator[DocumentRecord]]
    write: Callable[[Iterable[DocumentRecord]], str | bytes]
    # The file a document at a time (an export streams these: webapp.curation.export); None: written whole.
    stream: Callable[[Iterable[DocumentRecord]], Iterator[str]] | None = None


FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("pubtator", "PubTator", "text/plain; charset=utf-8", "txt", read_pubtator, write_pubtator, stream_pubtator),
        Format("bioc-xml", "BioC XML", "application/xml; charset=utf-8", "xml", read_bioc_xml, write_bioc_xml, stream_bioc_xml),
        Format("bioc-json", "BioC JSON", "application/json", "json", read_bioc_json, write_bioc_json),
        Format("brat", "brat standoff (zip of .txt and .ann)", "application/zip", "zip", read_brat, write_brat),
        Format("jsonl", "JSON Lines", "application/x-ndjson", "jsonl", read_jsonl, write_jsonl, stream_jsonl),
        # One document per .txt file (or per .txt of a .zip / .tar.gz); exported as a zip of .txt files.
        # PubMed baseline and update files (.xml or .xml.gz), streamed and committed per batch
        # (webapp.corpus.pubmed_import); exported as title and abstract alone.
        Format("pubmed-xml", "PubMed XML (baseline or update, .xml.gz)", "application/xml; charset=utf-8", "xml",
               read_pubmed, write_pubmed),
        Format("pubannotation", "PubAnnotation JSON", "application/json", "json", read_pubannotation, write_pubannotation,
               stream_pubannotation),
        Format("text", "Plain text (.txt, or a .zip / .tar.gz of .txt files)", "application/zip", "zip", read_text, write_text),
    )
}


def get_format(name: str) -> Format:
    try:
        return FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown format {name!r}; expected one of {', '.join(FORMATS)}") from None
