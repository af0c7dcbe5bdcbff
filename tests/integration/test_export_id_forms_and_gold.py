"""One export spells every concept id one way, and gold links stay exportable after a curator decides.

The file "small" writes MeSH ids bare and OMIM ids prefixed, as NCBI does; the dictionary "mini" writes both with a
prefix, as CTD's MEDIC does. bob then relinks "breast cancer" (gold OMIM:114480) to Breast Neoplasms through the
concept search and rejects "asthma". In every format with links: the default export writes the dictionary's ids
(the composite "D001943|D010051" as "MESH:D001943|MESH:D010051", a conjunction piece by piece, an id that resolves
only through an alternative id as its concept's, an unknown id in the dictionary's spelling); ``ids=source`` the
file's (bob's link respelled bare); ``links=gold`` the gold standard whatever bob decided; ``links=all`` (JSONL,
BioC) gold and bob's links side by side with their origin, refused by PubTator and brat.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from bioc import biocjson, biocxml
from rest_framework.test import APIClient

from linker.data import iter_pubtator
from webapp.corpus.formats import FORMATS
from webapp.corpus.formats.services import import_documents
from webapp.corpus.models import Collection, Document, Mention
from webapp.curation import services
from webapp.curation.export import export_documents
from webapp.curation.models import Decision
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, Name

pytestmark = pytest.mark.django_db

TITLE = "Familial breast and ovarian cancer"
ABSTRACT = "Hypertension, asthma and breast cancer; Crohn-colitis and an unknown syndrome."
TEXT = f"{TITLE} {ABSTRACT}"
ROWS = [  # (mention, ids as the file writes them)
    ("breast and ovarian cancer", "D001943|D010051"),
    ("Hypertension", "D999001"),  # an alternative id of MESH:D006973
    ("asthma", "D001249"),
    ("breast cancer", "OMIM:114480"),
    ("Crohn-colitis", "D003424+D003092"),  # D003092: an alternative id added after the import
    ("unknown syndrome", "D000999"),  # in no release: kept, spelled as the dictionary spells MeSH ids
]
FORMATS_WITH_LINKS = ["pubtator", "bioc-xml", "bioc-json", "brat", "jsonl"]

DICTIONARY_IDS = {
    "breast and ovarian cancer": "MESH:D001943|MESH:D010051",
    "Hypertension": "MESH:D006973",
    "breast cancer": "MESH:D001943",  # bob's decision
    "Crohn-colitis": "MESH:D003424+MESH:D003093",
    "unknown syndrome": "MESH:D000999",
}
SOURCE_IDS = {
    "breast and ovarian cancer": "D001943|D010051",
    "Hypertension": "D999001",
    "breast cancer": "D001943",  # bob's decision, spelled as the file spells MeSH ids
    "Crohn-colitis": "D003424+D003092",
    "unknown syndrome": "D000999",
}


def _span(needle: str) -> tuple[int, int]:
    start = TEXT.index(needle)
    return start, start + len(needle)


@pytest.fixture
def small(tmp_path: Path, bob) -> Collection:  # type: ignore[no-untyped-def]
    dictionary = Dictionary.objects.create(slug="mini", title="Mini")
    version = DictionaryVersion.objects.create(
        dictionary=dictionary, release="1", source_format="medic", checksum="m" * 64
    )
    for cid, name, alt_ids in [
        ("MESH:D001943", "Breast Neoplasms", []),
        ("MESH:D010051", "Ovarian Neoplasms", []),
        ("MESH:D006973", "Hypertension", ["MESH:D999001"]),
        ("MESH:D001249", "Asthma", []),
        ("OMIM:114480", "Breast cancer", []),
    ]:
        concept = Concept.objects.create(
            version=version, concept_id=cid, preferred_name=name, alt_ids=alt_ids
        )
        Name.objects.create(concept=concept, text=name, normalized=name.lower(), is_preferred=True)
    lines = [f"100|t|{TITLE}", f"100|a|{ABSTRACT}"]
    lines += [
        f"100\t{_span(needle)[0]}\t{_span(needle)[1]}\t{needle}\tDisease\t{ids}" for needle, ids in ROWS
    ]
    path = tmp_path / "small.pubtator"
    path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    import_documents(path, "pubtator", collection_slug="small", dictionary_slug="mini")
    Concept.objects.create(
        version=version, concept_id="MESH:D003093", preferred_name="Colitis", alt_ids=["D003092"]
    )

    breast = Mention.objects.get(text="breast cancer")
    services.decide(
        user=bob,
        mention_id=breast.pk,
        action="relink",
        seen_updated_at=breast.updated_at,
        concept=Concept.objects.get(concept_id="MESH:D001943"),
        via=Decision.Via.SEARCH,
    )
    asthma = Mention.objects.get(text="asthma")
    services.decide(user=bob, mention_id=asthma.pk, action="reject", seen_updated_at=asthma.updated_at)
    return Collection.objects.get(slug="small")


def ids_by_mention(fmt: str, content: bytes, tmp_path: Path) -> dict[str, str]:
    """Mention text -> its id field as PubTator writes it (parts joined by "|"), read from an export in ``fmt``."""
    if fmt == "pubtator":
        path = tmp_path / "export.txt"
        path.write_bytes(content)
        return {m.text: m.ids_raw for d in iter_pubtator(path) for m in d.mentions}
    if fmt in ("bioc-xml", "bioc-json"):
        collection = (biocxml if fmt == "bioc-xml" else biocjson).loads(content.decode())
        return {
            a.text: a.infons.get("identifier", "")
            for d in collection.documents
            for p in d.passages
            for a in p.annotations
        }
    if fmt == "jsonl":
        return {
            m["text"]: "|".join("-1" if link["nil"] else link["concept_id"] for link in m["links"])
            for line in content.decode().splitlines()
            for m in json.loads(line)["mentions"]
        }
    with zipfile.ZipFile(io.BytesIO(content)) as archive:  # brat
        ann = archive.read("100.ann").decode()
    texts = {
        cols[0]: cols[2]
        for cols in (line.split("\t") for line in ann.splitlines())
        if cols[0].startswith("T")
    }
    out: dict[str, list[str]] = {text: [] for text in texts.values()}
    for cols in (line.split("\t") for line in ann.splitlines() if line.startswith("N")):
        _, target, concept_id = cols[1].split(" ")
        out[texts[target]].append(concept_id)
    return {text: "|".join(ids) for text, ids in out.items()}


def _export(fmt: str, **options: Any) -> bytes:
    return export_documents(Document.objects.filter(collection__slug="small"), fmt, **options).content


@pytest.mark.parametrize("fmt", FORMATS_WITH_LINKS)
def test_the_default_export_spells_every_id_as_the_dictionary_does(
    small: Collection, fmt: str, tmp_path: Path
) -> None:
    assert ids_by_mention(fmt, _export(fmt), tmp_path) == DICTIONARY_IDS  # asthma: rejected by bob


@pytest.mark.parametrize("fmt", FORMATS_WITH_LINKS)
def test_ids_source_spells_every_id_as_the_imported_file_does(
    small: Collection, fmt: str, tmp_path: Path
) -> None:
    assert ids_by_mention(fmt, _export(fmt, ids="source"), tmp_path) == SOURCE_IDS


@pytest.mark.parametrize("fmt", FORMATS_WITH_LINKS)
def test_links_gold_exports_the_gold_standard_whatever_curators_decided(
    small: Collection, fmt: str, tmp_path: Path
) -> None:
    gold = ids_by_mention(fmt, _export(fmt, links="gold"), tmp_path)
    assert gold == {**DICTIONARY_IDS, "breast cancer": "OMIM:114480", "asthma": "MESH:D001249"}
    assert ids_by_mention(fmt, _export(fmt, links="gold", ids="source"), tmp_path) == dict(ROWS) | {
        "Crohn-colitis": "D003424+D003092"
    }


@pytest.mark.parametrize("fmt", FORMATS_WITH_LINKS)
def test_links_curator_exports_only_the_curators_decisions(
    small: Collection, fmt: str, tmp_path: Path
) -> None:
    curated = ids_by_mention(fmt, _export(fmt, links="curator"), tmp_path)
    assert curated["breast cancer"] == "MESH:D001943"
    assert {text: ids for text, ids in curated.items() if text != "breast cancer"} == {
        text: "" for text in DICTIONARY_IDS if text != "breast cancer"
    }


def test_jsonl_links_all_writes_gold_and_the_curators_link_with_their_origin(small: Collection) -> None:
    lines = [json.loads(line) for line in _export("jsonl", links="all").decode().splitlines()]
    mentions = {m["text"]: m for m in lines[0]["mentions"]}
    breast = [
        (link["origin"], link["concept_id"], link["decided_by"], link["decided_via"])
        for link in mentions["breast cancer"]["links"]
    ]
    assert breast == [("gold", "OMIM:114480", "gold", None), ("curator", "MESH:D001943", "bob", "search")]
    assert mentions["asthma"]["status"] == "rejected"
    assert [(link["origin"], link["concept_id"]) for link in mentions["asthma"]["links"]] == [
        ("gold", "MESH:D001249")
    ]
    assert [link["concept_id"] for link in mentions["breast and ovarian cancer"]["links"]] == [
        "MESH:D001943",
        "MESH:D010051",
    ]


@pytest.mark.parametrize("fmt", ["bioc-xml", "bioc-json"])
def test_bioc_links_all_writes_one_annotation_per_origin(small: Collection, fmt: str) -> None:
    content = _export(fmt, links="all", ids="source").decode()
    collection = (biocxml if fmt == "bioc-xml" else biocjson).loads(content)
    annotations = [a for p in collection.documents[0].passages for a in p.annotations]
    breast = [
        (a.infons["origin"], a.infons["identifier"], a.infons["decided_by"])
        for a in annotations
        if a.text == "breast cancer"
    ]
    assert breast == [("gold", "OMIM:114480", "gold"), ("curator", "D001943", "bob")]
    composite = [a.infons for a in annotations if a.text == "breast and ovarian cancer"]
    assert [(i["origin"], i["identifier"]) for i in composite] == [("gold", "D001943|D010051")]


@pytest.mark.parametrize("fmt", ["jsonl", "bioc-xml", "bioc-json"])
def test_an_export_of_all_links_imports_again_with_the_gold_links(
    small: Collection, fmt: str, tmp_path: Path
) -> None:
    path = tmp_path / f"all.{FORMATS[fmt].extension}"
    path.write_bytes(_export(fmt, links="all", ids="source"))
    report = import_documents(path, fmt, collection_slug="again", dictionary_slug="mini")
    assert report.mentions == len(ROWS)
    again = export_documents(
        Document.objects.filter(collection__slug="again"), "pubtator", ids="source"
    ).content
    assert ids_by_mention("pubtator", again, tmp_path) == dict(ROWS)


@pytest.mark.parametrize("fmt", ["pubtator", "brat"])
def test_links_all_is_refused_by_a_format_that_cannot_say_whose_a_link_is(
    small: Collection, fmt: str
) -> None:
    with pytest.raises(
        ValueError, match="no place to say which is which: export links=gold and links=curator"
    ):
        _export(fmt, links="all")


def test_the_export_api_takes_the_id_form_and_the_choice_of_links(small: Collection, bob) -> None:  # type: ignore[no-untyped-def]
    api = APIClient()
    api.force_authenticate(bob)
    url = "/api/collections/small/export/"
    response = api.get(url, {"as": "pubtator", "ids": "source", "links": "gold"})
    assert response.status_code == 200
    assert (
        f"100\t{_span('breast cancer')[0]}\t{_span('breast cancer')[1]}\tbreast cancer\tDisease\tOMIM:114480"
        in (response.getvalue().decode())
    )
    document = Document.objects.get(collection=small)
    one = api.get(f"/api/documents/{document.pk}/export/", {"as": "jsonl", "links": "all"})
    assert one.status_code == 200 and '"origin": "gold"' in one.content.decode()
    for params, field, says in [
        ({"ids": "bare"}, "ids", "unknown value 'bare'; expected one of dictionary, source"),
        ({"links": "every"}, "links", "unknown value 'every'; expected one of decided, gold, curator, all"),
        (
            {"as": "brat", "links": "all"},
            "links",
            "brat standoff (zip of .txt and .ann) has no place to say which is which",
        ),
    ]:
        refused = api.get(url, params)
        assert refused.status_code == 400, params
        assert says in refused.json()[field][0]


@pytest.mark.shared_data
def test_ncbi_dev_8751855_exports_one_id_form_and_keeps_its_gold_after_a_decision(
    shared_data: Path, tmp_path: Path, bob
) -> None:  # type: ignore[no-untyped-def]
    """The document of the report: NCBI writes D061325 and D001943|D010051 bare; CTD's MEDIC writes MESH:."""
    source = shared_data / "ncbi-disease" / "NCBIdevelopset_corpus.txt"
    if not source.is_file():
        pytest.skip(f"{source} is absent")
    block = [line for line in source.read_text(encoding="utf-8").splitlines() if line.startswith("8751855")]
    path = tmp_path / "8751855.txt"
    path.write_text("\n".join(block) + "\n\n", encoding="utf-8")
    dictionary = Dictionary.objects.create(slug="medic-mini", title="MEDIC (four concepts)")
    version = DictionaryVersion.objects.create(
        dictionary=dictionary, release="1", source_format="medic", checksum="n" * 64
    )
    for cid, name in [
        ("MESH:D061325", "Hereditary Breast and Ovarian Cancer Syndrome"),
        ("MESH:D001943", "Breast Neoplasms"),
        ("MESH:D010051", "Ovarian Neoplasms"),
        ("MESH:D009386", "Neoplastic Syndromes, Hereditary"),
    ]:
        Concept.objects.create(version=version, concept_id=cid, preferred_name=name)
    import_documents(path, "pubtator", collection_slug="ncbi-dev", dictionary_slug="medic-mini")
    breast = Mention.objects.get(start=107, end=120)
    services.decide(
        user=bob,
        mention_id=breast.pk,
        action="accept",
        seen_updated_at=breast.updated_at,
        concept=Concept.objects.get(concept_id="MESH:D001943"),
    )

    exported = _export_ncbi("pubtator", tmp_path)
    assert len(exported) == len(block) - 2
    assert exported["107"] == "MESH:D001943" and exported["786"] == "MESH:D001943|MESH:D010051"
    assert all(piece.startswith("MESH:") for ids in exported.values() for piece in ids.split("|"))
    as_written = {line.split("\t")[1]: line.split("\t")[5] for line in block[2:]}
    assert _export_ncbi("pubtator", tmp_path, ids="source", links="gold") == as_written
    assert _export_ncbi("pubtator", tmp_path, ids="source") == as_written  # bob's decision respelled bare
    lines = export_documents(
        Document.objects.filter(collection__slug="ncbi-dev"), "jsonl", links="all"
    ).content
    [document] = [json.loads(line) for line in lines.decode().splitlines()]
    [decided] = [m for m in document["mentions"] if m["start"] == 107]
    assert [(link["origin"], link["concept_id"]) for link in decided["links"]] == [
        ("gold", "MESH:D001943"),
        ("curator", "MESH:D001943"),
    ]


def _export_ncbi(fmt: str, tmp_path: Path, **options: Any) -> dict[str, str]:
    """Start offset -> ids of the NCBI document's export."""
    content = export_documents(Document.objects.filter(collection__slug="ncbi-dev"), fmt, **options).content
    path = tmp_path / "ncbi-export.txt"
    path.write_bytes(content)
    return {str(m.start): m.ids_raw for d in iter_pubtator(path) for m in d.mentions}


def test_the_collection_page_offers_the_export_with_its_choices(small: Collection, bob_client) -> None:  # type: ignore[no-untyped-def]
    page = bob_client.get("/collections/small/").content.decode()
    assert 'action="/api/collections/small/export/"' in page
    for value in (
        'name="as"',
        'value="bioc-xml"',
        'name="links"',
        'value="gold"',
        'value="all"',
        'name="ids"',
        'value="source"',
        'name="suggestions"',
    ):
        assert value in page, value
    # What the form sends, with the curator's session: the gold standard as the file wrote it.
    response = bob_client.get(
        "/api/collections/small/export/", {"as": "pubtator", "links": "gold", "ids": "source"}
    )
    assert response.status_code == 200
    assert "\tOMIM:114480" in response.getvalue().decode() and "MESH:" not in response.getvalue().decode()


def test_the_text_format_takes_the_options_and_writes_the_texts_alone(small: Collection) -> None:
    with zipfile.ZipFile(io.BytesIO(_export("text", links="all", ids="source"))) as archive:
        assert archive.namelist() == ["100.txt"]
        assert archive.read("100.txt").decode() == TEXT
