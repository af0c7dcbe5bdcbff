"""Import a file, export it again: the same documents, spans and concept ids, in every format.

The files are written by the tests: a title + abstract document with characters outside ASCII and outside
the Basic Multilingual Plane (offsets count characters, not UTF-8 bytes or UTF-16 units), a composite
mention ("D1|D2"), a conjunction ("D1+D2"), a NIL mention and an unannotated document.
"""

from __future__ import annotations

from pathlib import Path

import bioc
import pytest
from bioc import biocxml

from linker.data import iter_pubtator
from webapp.corpus.formats import FORMATS
from webapp.corpus.formats.services import import_documents
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.curation.export import export_documents
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, Name

pytestmark = pytest.mark.django_db

TITLE = "Naïve asthma in 𝛼-cohorts"
ABSTRACT = "Bronchial asthma and breast and ovarian cancer; hypertension (HT) or Crohn–colitis."
TEXT = f"{TITLE} {ABSTRACT}"


def _span(text: str, needle: str) -> tuple[int, int]:
    start = text.index(needle)
    return start, start + len(needle)


def pubtator_file(folder: Path) -> Path:
    rows = [
        ("Naïve asthma", "Disease", "D001249"),
        ("Bronchial asthma", "Disease", "MESH:D001249"),
        ("breast and ovarian cancer", "Disease", "D001943|D010051"),
        ("hypertension", "Disease", "D006973"),
        ("HT", "Disease", "-1"),
        ("Crohn–colitis", "Disease", "D003424+D003092"),
    ]
    lines = [f"100|t|{TITLE}", f"100|a|{ABSTRACT}"]
    for needle, kind, ids in rows:
        s, e = _span(TEXT, needle)
        lines.append(f"100\t{s}\t{e}\t{needle}\t{kind}\t{ids}")
    lines += ["", "200|t|No annotations here.", "200|a|Just text.", ""]
    path = folder / "small.pubtator"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def mini(db) -> Dictionary:  # type: ignore[no-untyped-def]
    d = Dictionary.objects.create(slug="mini", title="Mini")
    v = DictionaryVersion.objects.create(dictionary=d, release="1", source_format="medic", checksum="m" * 64)
    for cid, name in [("MESH:D001249", "Asthma"), ("MESH:D006973", "Hypertension"), ("MESH:D001943", "Breast Neoplasms")]:
        c = Concept.objects.create(version=v, concept_id=cid, preferred_name=name)
        Name.objects.create(concept=c, text=name, normalized=name.lower(), is_preferred=True)
    return d


def _as_tuples(path: Path) -> list[tuple[str, str, list[tuple[int, int, str, str]]]]:
    """(pmid, text, [(start, end, text, ids as written)]) of a PubTator file."""
    return [
        (d.pmid, d.text, sorted((m.start, m.end, m.text, m.ids_raw) for m in d.mentions))
        for d in iter_pubtator(path)
    ]


def _export_to(tmp_path: Path, slug: str, fmt: str, name: str) -> Path:
    """An export with the ids as the imported file wrote them (ids=source): what a round trip compares."""
    export = export_documents(Document.objects.filter(collection__slug=slug), fmt, ids="source")
    path = tmp_path / f"{name}.{FORMATS[fmt].extension}"
    path.write_bytes(export.content)
    return path


def _normalise_nil(rows: list[tuple[str, str, list[tuple[int, int, str, str]]]]) -> list[tuple[str, str, list[tuple[int, int, str, str]]]]:
    return [(p, t, [(s, e, x, "" if ids == "-1" else ids) for s, e, x, ids in ms]) for p, t, ms in rows]


def test_pubtator_round_trip_keeps_documents_spans_and_ids(tmp_path: Path, mini: Dictionary) -> None:
    source = pubtator_file(tmp_path)
    report = import_documents(source, "pubtator", collection_slug="a", dictionary_slug="mini")
    assert report.documents == 2 and report.mentions == 6
    out = _export_to(tmp_path, "a", "pubtator", "again")
    assert _as_tuples(out) == _as_tuples(source)
    # With ids=source the ids come back as the file wrote them ("D001249" stays bare) although they resolved to
    # MESH:D001249 (the default export writes that).
    assert Link.objects.filter(mention__document__collection__slug="a", concept__concept_id="MESH:D001249").count() == 2


@pytest.mark.parametrize("fmt", ["bioc-xml", "bioc-json", "jsonl"])
def test_round_trip_through_each_format(tmp_path: Path, mini: Dictionary, fmt: str) -> None:
    source = pubtator_file(tmp_path)
    import_documents(source, "pubtator", collection_slug="a", dictionary_slug="mini")
    middle = _export_to(tmp_path, "a", fmt, "middle")
    report = import_documents(middle, fmt, collection_slug="b", dictionary_slug="mini")
    assert report.documents == 2 and report.mentions == 6 and report.resolved_links == 4
    back = _export_to(tmp_path, "b", "pubtator", "back")
    assert _as_tuples(back) == _as_tuples(source)
    b = Document.objects.get(collection__slug="b", external_id="100")
    assert b.title == TITLE and b.text == TEXT


def test_brat_round_trip_keeps_spans_and_ids_but_not_nil(tmp_path: Path, mini: Dictionary) -> None:
    source = pubtator_file(tmp_path)
    import_documents(source, "pubtator", collection_slug="a")
    archive = _export_to(tmp_path, "a", "brat", "standoff")
    report = import_documents(archive, "brat", collection_slug="b")
    assert report.documents == 2 and report.mentions == 6
    back = _export_to(tmp_path, "b", "pubtator", "back")
    # brat has no title field and no NIL: the text is one piece, and the NIL mention comes back unlinked.
    expected = [(p, t, ms) for p, t, ms in _normalise_nil(_as_tuples(source))]
    got = [(p, t, ms) for p, t, ms in _normalise_nil(_as_tuples(back))]
    assert [(p, ms) for p, _, ms in got] == [(p, ms) for p, _, ms in expected]
    assert Document.objects.get(collection__slug="b", external_id="100").text == TEXT


def test_bioc_xml_with_title_and_abstract_passages_round_trips(tmp_path: Path) -> None:
    collection = bioc.BioCCollection()
    document = bioc.BioCDocument()
    document.id = "555"
    for kind, offset, text in [("title", 0, TITLE), ("abstract", len(TITLE) + 1, ABSTRACT)]:
        passage = bioc.BioCPassage()
        passage.infons["type"] = kind
        passage.offset = offset
        passage.text = text
        document.add_passage(passage)
    s, e = _span(TEXT, "Bronchial asthma")
    annotation = bioc.BioCAnnotation()
    annotation.id = "a1"
    annotation.infons.update({"type": "Disease", "identifier": "MESH:D001249"})
    annotation.text = "Bronchial asthma"
    annotation.add_location(bioc.BioCLocation(s, e - s))
    document.passages[1].add_annotation(annotation)
    collection.add_document(document)
    source = tmp_path / "in.xml"
    source.write_text(biocxml.dumps(collection), encoding="utf-8")

    import_documents(source, "bioc-xml", collection_slug="x")
    stored = Document.objects.get(collection__slug="x", external_id="555")
    assert (stored.title, stored.text) == (TITLE, TEXT)
    assert Mention.objects.get(document=stored).text == "Bronchial asthma"

    again = biocxml.loads(export_documents(Document.objects.filter(pk=stored.pk), "bioc-xml").content.decode())
    passages = again.documents[0].passages
    assert [(p.offset, p.text) for p in passages] == [(0, TITLE), (len(TITLE) + 1, ABSTRACT)]
    (ann,) = passages[1].annotations
    assert (ann.locations[0].offset, ann.locations[0].length, ann.text, ann.infons["identifier"]) == (s, e - s, "Bronchial asthma", "MESH:D001249")


def test_export_writes_curated_and_gold_links_and_suggestions_only_on_request(tmp_path: Path, mini: Dictionary) -> None:
    import_documents(pubtator_file(tmp_path), "pubtator", collection_slug="a", dictionary_slug="mini")
    hyper = Mention.objects.get(text="hypertension")
    asthma = Concept.objects.get(concept_id="MESH:D001249")
    # A curator relinked "hypertension" (to asthma, for the test); "HT" has only a model suggestion on top
    # of its gold NIL, and "Naïve asthma" was rejected as a span.
    Link.objects.create(mention=hyper, concept=asthma, concept_ref="MESH:D001249", origin=Link.Origin.CURATOR)
    ht = Mention.objects.get(text="HT")
    ht.links.all().delete()
    Link.objects.create(mention=ht, concept=asthma, concept_ref="MESH:D001249", origin=Link.Origin.MODEL, rank=1, score=3.0)
    Mention.objects.filter(text="Naïve asthma").update(status=Mention.Status.REJECTED)

    default = _export_to(tmp_path, "a", "pubtator", "default")
    rows = {text: ids for _, _, ms in _as_tuples(default) for _, _, text, ids in ms}
    assert "Naïve asthma" not in rows
    assert rows["hypertension"] == "MESH:D001249"
    assert rows["HT"] == ""
    with_suggestions = export_documents(Document.objects.filter(collection__slug="a"), "pubtator", suggestions=True)
    assert "\tHT\tDisease\tMESH:D001249" in with_suggestions.content.decode()


def test_document_without_annotations_imports_from_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "plain.jsonl"
    path.write_text('{"id": "p1", "text": "Plain text.\\nSecond line."}\n', encoding="utf-8")
    report = import_documents(path, "jsonl", collection_slug="plain")
    assert (report.documents, report.mentions) == (1, 0)
    assert Document.objects.get(external_id="p1").text == "Plain text.\nSecond line."
    assert not Collection.objects.get(slug="plain").has_gold


@pytest.mark.shared_data
@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["pubtator", "bioc-xml", "bioc-json"])
def test_ncbi_dev_round_trip(shared_data: Path, tmp_path: Path, fmt: str) -> None:
    source = shared_data / "ncbi-disease" / "NCBIdevelopset_corpus.txt"
    if not source.is_file():
        pytest.skip(f"{source} is absent")
    import_documents(source, "pubtator", collection_slug="ncbi-dev")
    if fmt == "pubtator":
        back = _export_to(tmp_path, "ncbi-dev", "pubtator", "back")
    else:
        middle = _export_to(tmp_path, "ncbi-dev", fmt, "middle")
        import_documents(middle, fmt, collection_slug="ncbi-dev-2")
        back = _export_to(tmp_path, "ncbi-dev-2", "pubtator", "back")
    expected = _as_tuples(source)
    got = _as_tuples(back)
    assert len(got) == len(expected) == 100
    assert got == expected


def test_bioc_xml_keeps_offsets_of_texts_with_line_breaks_and_control_characters(tmp_path: Path) -> None:
    path = tmp_path / "odd.jsonl"
    path.write_text('{"id": "o1", "text": "Line\\r\\nGout \\u000b here", "mentions": [{"start": 6, "end": 10}]}\n', encoding="utf-8")
    import_documents(path, "jsonl", collection_slug="odd")
    middle = _export_to(tmp_path, "odd", "bioc-xml", "odd")
    import_documents(middle, "bioc-xml", collection_slug="odd-2")
    again = Document.objects.get(collection__slug="odd-2")
    # The vertical tab cannot be written in XML: it becomes a space; every other character is kept.
    assert again.text == "Line\r\nGout   here"
    assert [(m.start, m.end, m.text) for m in again.mentions.all()] == [(6, 10, "Gout")]
