"""linker.data readers on tiny fixture files, and ParseError naming the file and line on bad input."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from linker.data import ParseError, Synonym, iter_dictionary, iter_pubtator, sniff_dictionary_format
from linker.dictionary_formats import iter_dnorm_dictionary, iter_medic_tsv, iter_obo

MEDIC = (
    "# Report created: Tue Jun 06 2017\n"
    "# Fields:\n"
    "# DiseaseName\tDiseaseID\tAltDiseaseIDs\tDefinition\tParentIDs\tTreeNumbers\tParentTreeNumbers\tSynonyms\tSlimMappings\n"
    "Breast Neoplasms\tMESH:D001943\tDO:DOID:1612|OMIM:114480\tTumors of the breast.\tMESH:D009371|MESH:D001941"
    "\tC04.588.180\tC04.588\tBreast Cancer|Breast Tumors\tCancer|Skin and connective tissue disease\n"
    "Myotonic Dystrophy\tMESH:D009223\t\t\tMESH:D009136\tC05.651\tC05\tDystrophia Myotonica\tMusculoskeletal disease\n"
)

DNORM = "D009223|160900||Myotonic Dystrophy|Dystrophia Myotonica|DM\n113705||Breast cancer 1|BRCA1\n"

OBO = """format-version: 1.2
data-version: hp/releases/2025-01-16

[Term]
id: HP:0000118
name: Phenotypic abnormality
synonym: "Organ abnormality" EXACT []

[Term]
id: HP:0001250
name: Seizure
alt_id: HP:0002279
def: "A seizure is an intermittent abnormality." [PMID:1]
synonym: "Epileptic seizure" RELATED []
synonym: "Seizures" EXACT layperson []
is_a: HP:0000118 ! Phenotypic abnormality

[Term]
id: HP:0000002
name: obsolete Abnormality of body height
is_obsolete: true

[Typedef]
id: part_of
name: part of
"""

TITLE = "Breast and ovarian cancer in BRCA1 carriers"
ABSTRACT = "Hereditary nonpolyposis colorectal cancer (HNPCC) is discussed."
TEXT = f"{TITLE} {ABSTRACT}"


def _mention_line(pmid: str, text: str, mention: str, mtype: str, ids: str, extra: str | None = None) -> str:
    start = TEXT.index(mention)
    cols = [pmid, str(start), str(start + len(mention)), mention, mtype, ids]
    if extra is not None:
        cols.append(extra)
    return "\t".join(cols)


PUBTATOR = "\n".join(
    [
        f"111|t|{TITLE}",
        f"111|a|{ABSTRACT}",
        _mention_line("111", TEXT, "Breast and ovarian cancer", "CompositeMention", "D001943|D010051",
                      "Breast cancer|ovarian cancer"),
        _mention_line("111", TEXT, "Hereditary nonpolyposis colorectal cancer", "SpecificDisease", "D003123+D015179"),
        _mention_line("111", TEXT, "HNPCC", "SpecificDisease", "-1"),
        "111\tCID\tD000001\tD003123",
        "",
        "222|t|Second document",
        "222|a|Nothing here.",
        "",
    ]
)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    if name.endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


# --- MEDIC TSV -----------------------------------------------------------------------------------


def test_medic_tsv_fields(tmp_path: Path) -> None:
    path = _write(tmp_path, "CTD_diseases.tsv.gz", MEDIC)
    recs = list(iter_medic_tsv(path))
    assert [r.concept_id for r in recs] == ["MESH:D001943", "MESH:D009223"]
    bn = recs[0]
    assert bn.preferred_name == "Breast Neoplasms"
    assert bn.synonyms == (Synonym("Breast Cancer"), Synonym("Breast Tumors"))
    assert bn.alt_ids == ("DO:DOID:1612", "OMIM:114480")
    assert bn.parents == ("MESH:D009371", "MESH:D001941")
    assert bn.known_types == ("Cancer", "Skin and connective tissue disease")
    assert bn.definition == "Tumors of the breast."
    assert bn.line == 4
    assert sniff_dictionary_format(path) == "medic"


def test_medic_tsv_wrong_column_count_names_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "bad.tsv", MEDIC + "Broken\tMESH:D000001\n")
    with pytest.raises(ParseError) as err:
        list(iter_medic_tsv(path))
    assert err.value.line == 6
    assert str(err.value).startswith(f"{path}:6:")


def test_medic_tsv_bad_id(tmp_path: Path) -> None:
    path = _write(tmp_path, "bad.tsv", MEDIC.replace("MESH:D009223", "D009223"))
    with pytest.raises(ParseError, match="DiseaseID"):
        list(iter_medic_tsv(path))


def test_truncated_gzip_raises_parse_error(tmp_path: Path) -> None:
    good = _write(tmp_path, "full.tsv.gz", MEDIC * 50)
    truncated = tmp_path / "truncated.tsv.gz"
    data = good.read_bytes()
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(ParseError) as err:
        list(iter_medic_tsv(truncated))
    assert err.value.path == str(truncated)


# --- DNorm ---------------------------------------------------------------------------------------


def test_dnorm_dictionary(tmp_path: Path) -> None:
    path = _write(tmp_path, "medic.txt", DNORM)
    recs = list(iter_dnorm_dictionary(path))
    assert recs[0].concept_id == "D009223"
    assert recs[0].alt_ids == ("OMIM:160900",)
    assert recs[0].all_names() == ["Myotonic Dystrophy", "Dystrophia Myotonica", "DM"]
    assert recs[1].concept_id == "OMIM:113705"  # bare OMIM numbers get their prefix
    assert [r.concept_id for r in iter_dictionary(path)] == ["D009223", "OMIM:113705"]


def test_dnorm_line_without_separator(tmp_path: Path) -> None:
    path = _write(tmp_path, "medic.txt", DNORM + "D000001 Some name\n")
    with pytest.raises(ParseError) as err:
        list(iter_dnorm_dictionary(path))
    assert err.value.line == 3


def test_dnorm_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes(DNORM.encode() + "D000002||Sj\xf6gren\n".encode("latin-1"))
    with pytest.raises(ParseError, match="not UTF-8"):
        list(iter_dnorm_dictionary(path))


# --- OBO -----------------------------------------------------------------------------------------


def test_obo_terms_scopes_and_obsolete(tmp_path: Path) -> None:
    path = _write(tmp_path, "hp.obo.gz", OBO)
    recs = {r.concept_id: r for r in iter_obo(path)}
    assert set(recs) == {"HP:0000118", "HP:0001250"}
    seizure = recs["HP:0001250"]
    assert seizure.synonyms == (Synonym("Epileptic seizure", "RELATED"), Synonym("Seizures", "EXACT"))
    assert seizure.parents == ("HP:0000118",)
    assert seizure.alt_ids == ("HP:0002279",)
    assert seizure.definition == "A seizure is an intermittent abnormality."
    with_obsolete = {r.concept_id: r for r in iter_obo(path, include_obsolete=True)}
    assert with_obsolete["HP:0000002"].obsolete is True
    assert sniff_dictionary_format(path) == "obo"


def test_obo_malformed_synonym(tmp_path: Path) -> None:
    path = _write(tmp_path, "bad.obo", OBO.replace('"Seizures" EXACT', '"Seizures EXACT'))
    with pytest.raises(ParseError) as err:
        list(iter_obo(path))
    assert err.value.line == 9  # the stanza of the term
    assert "HP:0001250" in str(err.value)


def test_obo_garbage_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "garbage.obo", "this is not an ontology\n")
    with pytest.raises(ParseError):
        list(iter_obo(path))


# --- PubTator ------------------------------------------------------------------------------------


def test_pubtator_documents_mentions_and_composites(tmp_path: Path) -> None:
    path = _write(tmp_path, "corpus.txt", PUBTATOR)
    docs = list(iter_pubtator(path))
    assert [d.pmid for d in docs] == ["111", "222"]
    doc = docs[0]
    assert doc.text == TEXT
    composite, conj, nil = doc.mentions
    assert composite.parts == (("D001943",), ("D010051",))
    assert composite.is_composite
    assert composite.part_texts == ("Breast cancer", "ovarian cancer")
    assert doc.text[composite.start : composite.end] == "Breast and ovarian cancer"
    assert conj.parts == (("D003123", "D015179"),)
    assert not conj.is_composite
    assert nil.parts == ()
    assert doc.relations == (("CID", "D000001", "D003123"),)
    assert docs[1].mentions == ()


def test_pubtator_offsets_that_do_not_match_the_text(tmp_path: Path) -> None:
    bad = PUBTATOR.replace("\tHNPCC\t", "\tHNPCX\t")
    path = _write(tmp_path, "corpus.txt", bad)
    with pytest.raises(ParseError) as err:
        list(iter_pubtator(path))
    assert err.value.line == 5
    assert str(err.value).startswith(f"{path}:5:")


def test_pubtator_garbled_offsets(tmp_path: Path) -> None:
    lines = PUBTATOR.split("\n")
    cols = lines[2].split("\t")
    cols[1] = "x0"
    lines[2] = "\t".join(cols)
    path = _write(tmp_path, "corpus.txt", "\n".join(lines))
    with pytest.raises(ParseError, match="not integers") as err:
        list(iter_pubtator(path))
    assert err.value.line == 3


def test_pubtator_truncated_annotation_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "corpus.txt", PUBTATOR.split("\n222|t|")[0].rstrip() + "\n111\t0\t6\n")
    with pytest.raises(ParseError, match="columns") as err:
        list(iter_pubtator(path))
    assert err.value.line == 7


def test_pubtator_annotation_before_title(tmp_path: Path) -> None:
    path = _write(tmp_path, "corpus.txt", "111\t0\t6\tBreast\tDisease\tD001943\n")
    with pytest.raises(ParseError) as err:
        list(iter_pubtator(path))
    assert err.value.line == 1
