from __future__ import annotations

import json

import pytest

from linker.config import LinkerConfig
from linker.delta import Delta
from linker.dictionary import NameTable
from linker.encoders import TransformerEncoder
from linker.linker import Linker
from linker.retrieval import RetrievalConfig

MENTIONS = ["breast and ovarian cancer", "Huntington's disease", "NIDDM", "A-T"]
DOCUMENT = "Patients with ataxia telangiectasia (A-T) and Huntington's disease were seen."


@pytest.fixture(scope="module")
def linker(minilm: TransformerEncoder, tiny_dictionary_file) -> Linker:  # type: ignore[no-untyped-def]
    from linker.dictionary_formats import iter_dnorm_dictionary

    config = LinkerConfig(retrieval=RetrievalConfig(sparse_weight=3.0))
    return Linker.build(list(iter_dnorm_dictionary(tiny_dictionary_file)), minilm, config)


def test_save_load_round_trip_gives_identical_candidates(linker: Linker, tmp_path) -> None:  # type: ignore[no-untyped-def]
    linker.save(tmp_path / "artifact")
    for name in ("config.json", "encoder", "sparse", "index", "table"):
        assert (tmp_path / "artifact" / name).exists()
    config = json.loads((tmp_path / "artifact" / "config.json").read_text())
    assert config["config"]["retrieval"]["sparse_weight"] == 3.0
    loaded = Linker.load(tmp_path / "artifact")
    before = linker.link_mentions(MENTIONS, DOCUMENT, k=5)
    after = loaded.link_mentions(MENTIONS, DOCUMENT, k=5)
    assert [[c.concept_id for c in r] for r in after] == [[c.concept_id for c in r] for r in before]
    for r_a, r_b in zip(after, before, strict=True):
        for a, b in zip(r_a, r_b, strict=True):
            assert a.name == b.name and a.part == b.part
            assert a.score == pytest.approx(b.score, abs=1e-4)


def test_composite_mentions_get_candidates_per_part(linker: Linker) -> None:
    (parts,) = linker.link_parts(["breast and ovarian cancer"], k=3)
    assert [p[0].concept_id for p in parts] == ["D001943", "D010051"]
    (flat,) = linker.link_mentions(["breast and ovarian cancer"], k=3)
    assert [c.part for c in flat] == [0, 0, 0, 1, 1, 1]


def test_abbreviations_are_resolved_from_the_document(linker: Linker) -> None:
    (cands,) = linker.link_mentions(["A-T"], DOCUMENT, k=1)
    assert cands[0].concept_id == "D001260"


def test_names_of_a_delta_are_searchable_at_once_and_the_artifact_stays_as_built(linker: Linker, tmp_path) -> None:  # type: ignore[no-untyped-def]
    query = "zz curator synonym for myeloma"
    linker.save(tmp_path / "built")
    served = Linker.load(tmp_path / "built").with_delta(Delta(((query, "D009101"),)))
    (cands,) = served.link_mentions([query], k=1)
    assert cands[0].concept_id == "D009101" and cands[0].name == query
    assert len(Linker.load(tmp_path / "built").table) == len(linker.table)


def test_a_sparse_only_linker_needs_no_encoder(tiny_table: NameTable) -> None:
    linker = Linker.build(tiny_table, None)
    (cands,) = linker.link_mentions(["colorectal cancer"], k=2)
    assert cands[0].concept_id == "D015179"
