"""PubAnnotation JSON in and out (one document and a collection), and BioC passages (a PMC article's sections)
kept through an import and given back by an export (issue #45)."""

from __future__ import annotations

import json

import pytest

from webapp.corpus.formats import get_format
from webapp.corpus.formats.services import import_documents
from webapp.corpus.models import Document, Mention
from webapp.curation.export import export_documents

pytestmark = pytest.mark.django_db

PUBANNOTATION = {
    "text": "Colorectal cancer in APC carriers.",
    "sourcedb": "PubMed",
    "sourceid": "123",
    "denotations": [
        {"id": "T1", "span": {"begin": 0, "end": 17}, "obj": "D015179"},
        {"id": "T2", "span": {"begin": 21, "end": 24}, "obj": "Gene"},
    ],
    "attributes": [
        {"id": "A1", "subj": "T1", "pred": "type", "obj": "Disease"},
        {"id": "A2", "subj": "T2", "pred": "type", "obj": "Gene"},
    ],
}

PMC_BIOC = {
    "source": "PMC", "date": "2024", "key": "BioC.key", "infons": {},
    "documents": [{
        "id": "PMC1", "infons": {}, "relations": [],
        "passages": [
            {"offset": 0, "infons": {"type": "front", "section_type": "TITLE"}, "text": "A title", "sentences": [],
             "annotations": [], "relations": []},
            {"offset": 8, "infons": {"type": "abstract", "section_type": "ABSTRACT"}, "text": "An abstract.",
             "sentences": [], "annotations": [], "relations": []},
            {"offset": 30, "infons": {"type": "paragraph", "section_type": "INTRO"}, "text": "Intro text.",
             "sentences": [], "annotations": [], "relations": []},
        ],
    }],
}


def test_pubannotation_document_in_and_out(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "one.json"
    path.write_text(json.dumps(PUBANNOTATION))
    report = import_documents(path, "pubannotation", collection_slug="pa")
    assert (report.documents, report.mentions, report.links) == (1, 2, 1)
    spans = sorted(Mention.objects.values_list("start", "end", "mention_type"))
    assert spans == [(0, 17, "Disease"), (21, 24, "Gene")]
    out = json.loads(export_documents(Document.objects.filter(collection__slug="pa"), "pubannotation").content)
    assert len(out) == 1 and out[0]["sourceid"] == "123" and out[0]["text"] == PUBANNOTATION["text"]
    assert [(d["span"], d["obj"]) for d in out[0]["denotations"]] == [
        ({"begin": 0, "end": 17}, "D015179"), ({"begin": 21, "end": 24}, "Gene"),
    ]


def test_pubannotation_collection_round_trip(tmp_path) -> None:  # type: ignore[no-untyped-def]
    second = {**PUBANNOTATION, "sourceid": "456", "denotations": [], "attributes": []}
    path = tmp_path / "many.json"
    path.write_text(json.dumps([PUBANNOTATION, second]))
    assert import_documents(path, "pubannotation", collection_slug="pa").documents == 2
    again = tmp_path / "again.json"
    again.write_bytes(export_documents(Document.objects.filter(collection__slug="pa").order_by("external_id"), "pubannotation").content)
    records = list(get_format("pubannotation").read(again))
    assert [r.external_id for r in records] == ["123", "456"]
    assert [(m.start, m.end, m.mention_type, m.ids_field()) for m in records[0].mentions] == [
        (0, 17, "Disease", "D015179"), (21, 24, "Gene", ""),
    ]


@pytest.mark.parametrize("fmt", ["bioc-json", "bioc-xml"])
def test_pmc_bioc_passages_are_kept(tmp_path, fmt: str) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "pmc.json"
    path.write_text(json.dumps(PMC_BIOC))
    if fmt == "bioc-xml":  # the same collection as BioC XML
        xml = get_format("bioc-xml").write(get_format("bioc-json").read(path))
        path = tmp_path / "pmc.xml"
        path.write_text(xml)
    import_documents(path, fmt, collection_slug="pmc")
    doc = Document.objects.get(collection__slug="pmc")
    assert [(p["type"], p["offset"], p["length"], p["section_type"]) for p in doc.metadata["passages"]] == [
        ("front", 0, 7, "TITLE"), ("abstract", 8, 12, "ABSTRACT"), ("paragraph", 30, 11, "INTRO"),
    ]
    exported = json.loads(export_documents(Document.objects.filter(pk=doc.pk), "bioc-json").content)
    passages = exported["documents"][0]["passages"]
    assert [(p["offset"], p["text"], p["infons"]["section_type"]) for p in passages] == [
        (0, "A title", "TITLE"), (8, "An abstract.", "ABSTRACT"), (30, "Intro text.", "INTRO"),
    ]
