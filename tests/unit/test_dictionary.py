"""NameTable: one row per (normalised name, concept), id resolution across corpora, save/load."""

from __future__ import annotations

from pathlib import Path

import pytest

from linker.data import ConceptRecord, Synonym
from linker.dictionary import NameTable
from linker.text import TextConfig

RECORDS = [
    ConceptRecord("D009223", "Myotonic Dystrophy", (Synonym("Dystrophia Myotonica"), Synonym("DM")),
                  alt_ids=("OMIM:160900",)),
    ConceptRecord("OMIM:160900", "Dystrophia myotonica 1", (Synonym("DM"), Synonym("dystrophia-myotonica"))),
    ConceptRecord("MESH:D001943", "Breast Neoplasms", (Synonym("Breast Cancer"), Synonym("breast cancer")),
                  alt_ids=("DO:DOID:1612", "OMIM:114480")),
    ConceptRecord("D000001", "Old term", obsolete=True),
]


@pytest.fixture()
def table() -> NameTable:
    return NameTable.from_records(RECORDS, TextConfig())


def test_rows_are_deduplicated_per_concept_but_shared_names_keep_one_row_each(table: NameTable) -> None:
    assert table.names.count("breast cancer") == 1
    assert table.names.count("dm") == 2
    dm_concepts = {table.concept_ids[i] for i, n in enumerate(table.names) if n == "dm"}
    assert dm_concepts == {"D009223", "OMIM:160900"}
    # "Dystrophia myotonica" (D009223) and "dystrophia-myotonica" (OMIM) normalise alike: one row each.
    assert table.names.count("dystrophia myotonica") == 2
    assert len(table.names) == len(table.concept_ids) == len(table.raw_names)


def test_obsolete_concepts_are_left_out(table: NameTable) -> None:
    assert "D000001" not in table.concepts


def test_concept_names(table: NameTable) -> None:
    rows = table.concept_names("D009223")
    assert sorted(table.names[r] for r in rows) == ["dm", "dystrophia myotonica", "myotonic dystrophy"]
    assert table.concept_names("D999999") == []
    assert table.raw_names[rows[0]] == "Myotonic Dystrophy"


@pytest.mark.parametrize(
    ("raw", "primary"),
    [
        ("D009223", "D009223"),
        ("MESH:D009223", "D009223"),  # MEDIC TSV spelling of an NCBI-style id
        ("D001943", "MESH:D001943"),  # NCBI spelling of a MEDIC TSV id
        ("OMIM:160900", "OMIM:160900"),  # a primary id wins over the alt id of another concept
        ("160900", "OMIM:160900"),  # bare OMIM number
        ("OMIM:114480", "MESH:D001943"),  # alt id
        ("114480", "MESH:D001943"),
        ("DO:DOID:1612", "MESH:D001943"),
        ("D999999", None),
    ],
)
def test_resolve_id(table: NameTable, raw: str, primary: str | None) -> None:
    assert table.resolve_id(raw) == primary


def test_add_creates_rows_for_new_pairs_only_and_counts_support(table: NameTable) -> None:
    n = len(table)
    created = table.add([("Steinert disease", "D009223"), ("dm", "D009223"), ("breast ca", "D001943")])
    assert created == [n, n + 1]
    assert table.names[n] == "steinert disease" and table.concept_ids[n] == "D009223"
    assert table.concept_ids[n + 1] == "MESH:D001943"  # resolved to the primary id
    dm_row = table.row("DM", "D009223")
    assert dm_row is not None and table.row_support[dm_row] == 1
    assert table.tie_key(dm_row) == (1, 2)
    assert table.add([("steinert disease", "D009223")]) == []


def test_add_with_an_unknown_id_makes_a_new_concept(table: NameTable) -> None:
    [row] = table.add([("curator term", "CUSTOM:1")])
    assert table.concept_ids[row] == "CUSTOM:1"
    assert table.resolve_id("CUSTOM:1") == "CUSTOM:1"


def test_save_load_round_trip(table: NameTable, tmp_path: Path) -> None:
    table.add([("Steinert disease", "D009223"), ("dm", "D009223")])
    table.save(tmp_path / "t")
    loaded = NameTable.load(tmp_path / "t")
    assert loaded.names == table.names
    assert loaded.concept_ids == table.concept_ids
    assert loaded.raw_names == table.raw_names
    assert loaded.alt_id_map == table.alt_id_map
    assert loaded.row_support == table.row_support
    assert loaded.concept_support == table.concept_support
    assert loaded.concepts == table.concepts
    assert loaded.cfg == table.cfg
    assert loaded.concept_names("D009223") == table.concept_names("D009223")
    assert loaded.resolve_id("114480") == "MESH:D001943"
    assert loaded.add([("dm", "D009223")]) == []
