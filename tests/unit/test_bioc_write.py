"""The streamed BioC XML export writes each <document> as text (webapp.corpus.formats.bioc_write): the same bytes
as the bioc package's lxml encoder, escapes and carriage returns included, and read back by the reader."""

from __future__ import annotations

from pathlib import Path

import pytest
from bioc import biocxml
from lxml import etree

from webapp.corpus.formats.bioc import read_bioc_xml, stream_bioc_xml, to_document
from webapp.corpus.formats.bioc_write import document_xml
from webapp.corpus.formats.records import DocumentRecord, LinkRecord, MentionRecord

TEXT = 'T & <x> "q"\r\nA\tb é 𝛼 > end'
DOCUMENTS = [
    DocumentRecord('1&<"', TEXT, 'T & <x> "q"', [
        MentionRecord(0, 1, "T", 'Dis"ease', (LinkRecord(0, "MESH:D1", False, origin="gold"),), ("a|b",)),
        MentionRecord(4, 7, "<x>", "A&B", ()),
    ], {}),
    DocumentRecord("2", "Plain text here", "", [], {"passages": [{"type": "text", "offset": 0, "length": 15, "section_type": "AB&<"}]}),
]


@pytest.mark.parametrize("record", DOCUMENTS, ids=["escapes", "kept-passages"])
def test_a_document_is_the_bytes_the_bioc_encoder_writes(record: DocumentRecord) -> None:
    document = to_document(record)
    assert document_xml(document) == etree.tostring(biocxml.encoder.encode_document(document), encoding="unicode", pretty_print=True)


def test_the_streamed_file_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "out.xml"
    path.write_text("".join(stream_bioc_xml(DOCUMENTS)), encoding="utf-8", newline="")
    back = list(read_bioc_xml(path))
    assert [(d.external_id, d.text) for d in back] == [(d.external_id, d.text) for d in DOCUMENTS]
    assert [(m.start, m.end, m.text, m.mention_type) for m in back[0].mentions] == [(0, 1, "T", 'Dis"ease'), (4, 7, "<x>", "A&B")]
