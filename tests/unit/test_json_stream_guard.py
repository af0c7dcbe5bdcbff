"""The streamed JSON readers (webapp.corpus.formats.streams) against what ijson's C parser gets wrong, and BioC XML
against external entities (issue #45): a lone surrogate escape ("\\ud800") is refused by its line, where the parser
would have read it as "?" or another character; a surrogate pair (an emoji) and an escaped backslash are text; an
XML external entity (XXE) is refused, never read."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from webapp.corpus.formats.bioc import read_bioc_json, read_bioc_xml
from webapp.corpus.formats.records import FormatError
from webapp.corpus.formats.streams import _SurrogateGuard


def _read_all(data: bytes, size: int) -> bytes:
    guard, out = _SurrogateGuard("f.json", io.BytesIO(data)), b""
    while chunk := guard.read(size):
        out += chunk
    return out


@pytest.mark.parametrize("size", [1, 7, 13, 1 << 16])
def test_pairs_and_escaped_backslashes_pass_whole_whatever_the_reads(size: int) -> None:
    data = b"x" * 70_000 + rb'["\ud83d\ude00", "\\ud800", "\\\\\\\\udc00"]' + b"\n" * 3
    assert _read_all(data, size) == data


@pytest.mark.parametrize("size", [1, 7, 13, 1 << 16])
@pytest.mark.parametrize("escape", [rb"\ud800", rb"\udc00", rb"\ud800\ud800"])
def test_a_lone_surrogate_is_refused_by_its_line(size: int, escape: bytes) -> None:
    data = b"x" * 70_000 + rb'["\ud83d\ude00",' + b"\n\n" + b'"a' + escape + b'b"]'
    with pytest.raises(FormatError, match=r"f\.json: line 3: a string holds a lone surrogate \(\\ud"):
        _read_all(data, size)


def _collection(title: str) -> dict[str, object]:
    passage = {"offset": 0, "text": title, "infons": {"type": "title"}, "annotations": [], "sentences": [], "relations": []}
    document = {"id": "1", "infons": {}, "passages": [passage], "relations": []}
    return {"source": "", "date": "", "key": "", "infons": {}, "documents": [document]}


def test_an_emoji_in_bioc_json_is_read_as_itself(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps(_collection("Asthma \U0001f600 attack")), encoding="utf-8")  # written as \ud83d\ude00
    assert [r.text for r in read_bioc_json(path)] == ["Asthma \U0001f600 attack"]


def test_a_lone_surrogate_in_bioc_json_is_refused_naming_document_and_field(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps(_collection("Asthma \ud800 attack")), encoding="utf-8")
    with pytest.raises(FormatError, match=r"c\.json: document 1: field 'title' contains a lone surrogate \(U\+D800\)"):
        list(read_bioc_json(path))


def test_an_xml_external_entity_is_refused_not_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the server's secret", encoding="utf-8")
    path = tmp_path / "c.xml"
    path.write_text(
        f'<?xml version="1.0"?>\n<!DOCTYPE collection [<!ENTITY x SYSTEM "file://{secret}">]>\n'
        "<collection><document><id>1</id><passage><offset>0</offset><text>&x;</text></passage></document></collection>\n",
        encoding="utf-8",
    )
    with pytest.raises(FormatError, match=r"c\.xml: line 3: not well-formed XML \(Entity 'x' not defined") as refused:
        list(read_bioc_xml(path))
    assert "secret" not in str(refused.value).replace(str(tmp_path), "")
