"""Names a delta takes back from a built linker (an undone curator synonym): no retrieval returns them, in every mode
and index kind, the other names keep their rows, and a sparse-only linker or a cascade takes deltas too."""

from __future__ import annotations

import pytest

from linker.config import LinkerConfig
from linker.data import ConceptRecord, Synonym
from linker.delta import Delta
from linker.dictionary import NameTable
from linker.encoders import TransformerEncoder
from linker.index_kinds import IndexConfig
from linker.linker import Linker

RECORDS = [
    ConceptRecord("D1", "breast cancer", (Synonym("mammary carcinoma"), Synonym("zz tumour of the milk gland"))),
    ConceptRecord("D2", "lung cancer", (Synonym("pulmonary neoplasm"),)),
    ConceptRecord("D3", "diabetes mellitus", (Synonym("sugar diabetes"),)),
    ConceptRecord("D4", "cardiomyopathy", (Synonym("heart muscle disease"),)),
]
SYNONYM = "zz tumour of the milk gland"  # a curator's synonym of D1, far from every other dictionary name


def _concepts(linker: Linker, query: str, mode: str | None = None) -> list[tuple[str, str]]:
    ranked = linker.retriever.retrieve([linker.preprocessor.normalize(query)], 4, mode)  # type: ignore[arg-type]
    return [(c.concept_id, c.name) for c in ranked[0]]


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
def test_a_name_taken_back_never_comes_back_as_a_candidate(minilm: TransformerEncoder, kind: str) -> None:
    base = Linker.build(RECORDS, minilm, LinkerConfig(index=IndexConfig(kind=kind)))  # type: ignore[arg-type]
    assert _concepts(base, SYNONYM)[0] == ("D1", SYNONYM)
    row = base.table.row(SYNONYM, "D1")
    served = base.with_delta(Delta(removed=frozenset({(SYNONYM, "D1")})))
    for mode in ("hybrid", "dense", "sparse"):
        found = _concepts(served, SYNONYM, mode)
        assert SYNONYM not in [name for _, name in found], mode
        assert len(found) == 4, mode  # the other concepts still fill the list
    assert served.table.concepts_named(SYNONYM) == []
    assert served.table.row(SYNONYM, "D1") is None
    assert row not in served.table.concept_names("D1")
    # Every other name is where it was, and the base keeps the one taken back.
    assert _concepts(served, "mammary carcinoma")[0] == ("D1", "mammary carcinoma")
    assert _concepts(served, "sugar diabetes")[0] == ("D3", "sugar diabetes")
    assert _concepts(base, SYNONYM)[0] == ("D1", SYNONYM)


def test_taking_back_a_pair_the_linker_does_not_hold_changes_nothing(minilm: TransformerEncoder) -> None:
    base = Linker.build(RECORDS, minilm)
    served = base.with_delta(Delta(removed=frozenset({("no such name", "D1"), ("heart muscle disease", "D2")})))
    assert _concepts(served, "heart muscle disease") == _concepts(base, "heart muscle disease")


def test_a_name_taken_back_and_added_again_gets_a_new_row_and_is_found(minilm: TransformerEncoder) -> None:
    base = Linker.build(RECORDS, minilm)
    served = base.with_delta(Delta(((SYNONYM, "D1"),), frozenset({(SYNONYM, "D1")})))
    row = served.table.row(SYNONYM, "D1")
    assert row is not None and row >= len(base.table)
    assert _concepts(served, SYNONYM)[0] == ("D1", SYNONYM)


def test_a_sparse_only_linker_takes_a_delta_too() -> None:
    base = Linker.build(NameTable.from_records(RECORDS), None)
    served = base.with_delta(Delta((("zz curator name", "D2"),), frozenset({(SYNONYM, "D1")})))
    assert SYNONYM not in [name for _, name in _concepts(served, SYNONYM)]
    assert _concepts(served, "zz curator name")[0] == ("D2", "zz curator name")


def test_a_delta_names_no_rows_of_the_base_s_support() -> None:
    """Each pair of a delta counts once in its name's support (a tie-break, a re-ranker feature): a pair the base
    holds already gets no row, only that count, and the base's own count stays."""
    base = Linker.build(NameTable.from_records(RECORDS), None)
    served = base.with_delta(Delta((("Breast cancer", "D1"), ("breast cancer", "D1"))))
    row = base.table.row("breast cancer", "D1")
    assert row is not None and len(served.table) == len(base.table)
    assert served.table.row_support[row] == 2 and served.table.concept_support["D1"] == 2
    assert base.table.row_support[row] == 0 and base.table.concept_support.get("D1", 0) == 0
