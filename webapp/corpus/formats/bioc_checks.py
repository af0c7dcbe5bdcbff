"""What the ``bioc`` package lets through and BioC does not allow, refused by name (the document, the passage or
annotation, the field) rather than read as something else or failed on with the package's bare error: a JSON
field of the wrong type, an offset that is not an integer, an annotation without an id, another root element.
:mod:`webapp.corpus.formats.bioc` reads through these."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import bioc
from lxml import etree

from webapp.corpus.formats.records import FormatError

__all__ = ["check_json_document", "integer_field", "check_xml_document", "annotations_in"]


def check_json_document(path: str | Path, index: int, document: bioc.BioCDocument) -> None:
    """Refuse what BioC JSON's schema types otherwise, naming the element and the field: the bioc package decodes
    without a schema, so an id given as an object would become the text "{'a': 1}" and an offset given as the
    string "0" would pass for a number. Ids and texts are strings, offsets and lengths integers, the infons of
    passages and annotations strings (or null, as PubTator Central writes an annotation without an identifier).
    A document's infons are its metadata, any JSON, as in JSONL. ``index``: the document's place in the file."""
    where = f"document {document.id if isinstance(document.id, str) and document.id.strip() else '#' + str(index)}"
    _typed(path, where, "field 'id'", document.id, str)
    if not isinstance(document.infons, dict):
        raise FormatError(path, where, f"field 'infons' must be an object (found {_json_type(document.infons)})")
    for number, passage in enumerate(document.passages, start=1):
        p_where = f"{where} / passage {number}"
        _typed(path, p_where, "field 'offset'", passage.offset, int)
        _typed(path, p_where, "field 'text'", passage.text, str, optional=True)
        _infons(path, p_where, passage.infons)
        for s_number, sentence in enumerate(passage.sentences, start=1):
            s_where = f"{p_where} / sentence {s_number}"
            _typed(path, s_where, "field 'offset'", sentence.offset, int)
            _typed(path, s_where, "field 'text'", sentence.text, str, optional=True)
    for a_number, annotation in enumerate(_all_annotations(document), start=1):
        a_where = f"{where} / annotation #{a_number}"
        _typed(path, a_where, "field 'id'", annotation.id, str)
        a_where = f"{where} / annotation {annotation.id}"
        _typed(path, a_where, "field 'text'", annotation.text, str, optional=True)
        _infons(path, a_where, annotation.infons)
        for location in annotation.locations:
            _typed(path, a_where, "location field 'offset'", location.offset, int)
            _typed(path, a_where, "location field 'length'", location.length, int)


def _typed(path: str | Path, where: str, name: str, value: object, kind: type, optional: bool = False) -> None:
    if value is None and optional:
        return
    # JSON Schema's integer is any number without a fraction (1e12, 3.0); bool is an int in Python, true is not 1.
    if kind is int and isinstance(value, float) and value.is_integer():
        return
    if not isinstance(value, kind) or isinstance(value, bool):
        expected = "an integer" if kind is int else "a string"
        raise FormatError(path, where, f"{name} must be {expected} (found {_shown(value)})")


def _infons(path: str | Path, where: str, infons: object) -> None:
    if not isinstance(infons, dict):
        raise FormatError(path, where, f"field 'infons' must be an object of strings (found {_json_type(infons)})")
    for key, value in infons.items():
        if value is not None and not isinstance(value, str):
            raise FormatError(path, where, f"infon {key!r} must be a string (found {_shown(value)})")


def _json_type(value: object) -> str:
    names = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _shown(value: object) -> str:
    text = repr(value)  # as the XML reader's refusals quote a value
    return text if len(text) <= 40 else text[:40] + "..."


def _all_annotations(document: bioc.BioCDocument) -> Iterator[bioc.BioCAnnotation]:
    yield from (annotation for annotation, _ in annotations_in(document, ""))


def integer_field(path: str | Path, where: str, value: object, name: str) -> int:
    """An offset or a length: an int (JSON, its types checked by :func:`check_json_types`) or a string of ASCII
    digits (XML has only text); anything else is refused by name."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*-?[0-9]+\s*", value):
        try:
            return int(value)
        except ValueError:  # more digits than Python converts (4,300): no offset anyway
            pass
    raise FormatError(path, where, f"{name} must be an integer (found {value!r})")


def check_xml_document(path: str | Path, where: str, document: etree._Element) -> None:
    """Refuse a BioC XML document's offset or length that is not an integer, or an annotation without its id, named
    by document and element (the bioc package reads them with int() and says no more than "invalid literal")."""
    for number, passage in enumerate(document.iterfind("passage"), start=1):
        integer_field(path, f"{where} / passage {number}", passage.findtext("offset"), "field 'offset'")
        for s_number, sentence in enumerate(passage.iterfind("sentence"), start=1):
            integer_field(path, f"{where} / passage {number} / sentence {s_number}", sentence.findtext("offset"), "field 'offset'")
    for number, annotation in enumerate(document.iter("annotation"), start=1):
        if annotation.get("id") is None:
            raise FormatError(path, f"{where} / annotation #{number}", "the annotation has no id (attribute 'id')")
        for location in annotation.iterfind("location"):
            for name in ("offset", "length"):
                integer_field(path, f"{where} / annotation {annotation.get('id')}", location.get(name), f"location field {name!r}")
    for infon in document.iter("infon"):
        if infon.get("key") is None:
            raise FormatError(path, f"{where} (line {infon.sourceline})", "an infon has no key (attribute 'key')")


def annotations_in(document: bioc.BioCDocument, where: str) -> Iterator[tuple[bioc.BioCAnnotation, str]]:
    """Every annotation of a document (its own, its passages', their sentences'), each with its place in an error
    (``where`` names the document)."""
    for annotation in document.annotations:
        yield annotation, f"{where} / annotation {annotation.id}"
    for passage in document.passages:
        for annotation in passage.annotations:
            yield annotation, f"{where} / annotation {annotation.id}"
        for sentence in passage.sentences:
            for annotation in sentence.annotations:
                yield annotation, f"{where} / annotation {annotation.id}"
