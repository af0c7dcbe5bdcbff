"""Taking names back from a built linker (an undone curator synonym): no retrieval returns them from the next
call on, in every mode and index kind, the other names keep their rows, and a save/load keeps them out."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from linker.config import LinkerConfig
from linker.data import ConceptRecord, Synonym
from linker.dictionary import NameTable
from linker.encoders import TransformerEncoder
from linker.index import DenseIndex
from linker.index_kinds import IndexConfig
from linker.linker import Linker
from linker.retrieval import RetrievalConfig

RECORDS = [
    ConceptRecord("D1", "breast cancer", (Synonym("mammary carcinoma"),)),
    ConceptRecord("D2", "lung cancer", (Synonym("pulmonary neoplasm"),)),
    ConceptRecord("D3", "diabetes mellitus", (Synonym("sugar diabetes"),)),
    ConceptRecord("D4", "cardiomyopathy", (Synonym("heart muscle disease"),)),
]
SYNONYM = "zz tumour of the milk gland"  # a curator's synonym of D1, far from every dictionary name


def _concepts(linker: Linker, query: str, mode: str | None = None) -> list[tuple[str, str]]:
    ranked = linker.retriever.retrieve([linker.preprocessor.normalize(query)], 4, mode)  # type: ignore[arg-type]
    return [(c.concept_id, c.name) for c in ranked[0]]


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
def test_a_removed_synonym_never_comes_back_as_a_candidate(minilm: TransformerEncoder, kind: str) -> None:
    linker = Linker.build(RECORDS, minilm, LinkerConfig(index=IndexConfig(kind=kind)))  # type: ignore[arg-type]
    (row,) = linker.add_names([(SYNONYM, "D1")])
    assert _concepts(linker, SYNONYM)[0] == ("D1", SYNONYM)

    assert linker.remove_names([(SYNONYM, "D1")]) == [row]

    for mode in ("hybrid", "dense", "sparse"):
        found = _concepts(linker, SYNONYM, mode)
        assert SYNONYM not in [name for _, name in found], mode
        assert len(found) == 4, mode  # the other concepts still fill the list
    assert linker.table.concepts_named(SYNONYM) == []
    assert linker.table.row(SYNONYM, "D1") is None
    assert row not in linker.table.concept_names("D1")
    # Every other name is where it was.
    assert _concepts(linker, "mammary carcinoma")[0] == ("D1", "mammary carcinoma")
    assert _concepts(linker, "sugar diabetes")[0] == ("D3", "sugar diabetes")


def test_removing_a_pair_the_linker_does_not_hold_changes_nothing(minilm: TransformerEncoder) -> None:
    linker = Linker.build(RECORDS, minilm)
    before = _concepts(linker, "heart muscle disease")
    assert linker.remove_names([("no such name", "D1"), ("heart muscle disease", "D2")]) == []
    assert _concepts(linker, "heart muscle disease") == before


def test_a_removed_name_added_again_gets_a_new_row_and_is_found(minilm: TransformerEncoder) -> None:
    linker = Linker.build(RECORDS, minilm)
    (first,) = linker.add_names([(SYNONYM, "D1")])
    linker.remove_names([(SYNONYM, "D1")])
    (second,) = linker.add_names([(SYNONYM, "D1")])
    assert second != first
    assert _concepts(linker, SYNONYM)[0] == ("D1", SYNONYM)


def test_removed_names_stay_out_after_save_and_load(minilm: TransformerEncoder, tmp_path: Path) -> None:
    config = LinkerConfig(retrieval=RetrievalConfig(sparse_weight=2.0))
    linker = Linker.build(RECORDS, minilm, config)
    linker.add_names([(SYNONYM, "D1")])
    linker.remove_names([(SYNONYM, "D1")])
    linker.save(tmp_path / "artifact")
    loaded = Linker.load(tmp_path / "artifact")
    assert SYNONYM not in [name for _, name in _concepts(loaded, SYNONYM)]
    assert loaded.table.removed == linker.table.removed
    assert loaded.index is not None and loaded.index.masked == linker.index.masked  # type: ignore[union-attr]
    assert _concepts(loaded, "lung cancer") == _concepts(linker, "lung cancer")


def test_a_sparse_only_linker_forgets_a_name_too() -> None:
    linker = Linker.build(NameTable.from_records(RECORDS), None)
    linker.add_names([(SYNONYM, "D1")])
    linker.remove_names([(SYNONYM, "D1")])
    assert SYNONYM not in [name for _, name in _concepts(linker, SYNONYM)]


def test_a_masked_dense_row_leaves_its_place_to_the_next_best() -> None:
    vectors = np.eye(4, dtype=np.float32)
    index = DenseIndex.build(vectors)
    index.mask([0])
    scores, rows = index.search(vectors[:1], 2)
    assert rows.tolist() == [[1, 2]]  # row 0 was the best; ties below it go by row
    assert scores.shape == (1, 2)


def test_the_generation_moves_with_every_change_to_the_names_and_only_then(minilm: TransformerEncoder) -> None:
    """What a caller keeping rankings (the web app's panel cache) reads to know they may have changed."""
    linker = Linker.build(RECORDS, minilm)
    start = linker.generation
    linker.add_names([(SYNONYM, "D1")])
    assert linker.generation == start + 1
    # Held already: no new row, but each pair counts once more in its support (the tie-break, a re-ranker feature).
    assert linker.add_names([(SYNONYM, "D1"), ("breast cancer", "D1")]) == []
    assert linker.generation == start + 2
    linker.remove_names([("no such name", "D1")])  # nothing to take back: nothing changes
    linker.add_names([])
    assert linker.generation == start + 2
    linker.remove_names([(SYNONYM, "D1")])
    assert linker.generation == start + 3
    linker.set_concept_prior({"D2": 3})
    assert linker.generation == start + 4
