from __future__ import annotations

import pytest

from linker.dictionary import NameTable
from linker.encoders import TransformerEncoder
from linker.index import DenseIndex
from linker.retrieval import Candidate, HybridRetriever, RetrievalConfig, encode_names
from linker.sparse import SparseEncoder


@pytest.fixture(scope="module")
def parts(minilm: TransformerEncoder, tiny_table: NameTable) -> tuple[SparseEncoder, DenseIndex]:
    sparse = SparseEncoder().fit(tiny_table.names)
    index = DenseIndex.build(encode_names(minilm, tiny_table.names))
    return sparse, index


def _retriever(table: NameTable, minilm: TransformerEncoder, parts, mode: str) -> HybridRetriever:  # type: ignore[no-untyped-def]
    sparse, index = parts
    return HybridRetriever(table, sparse, minilm, index, RetrievalConfig(mode=mode, sparse_weight=2.0))  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["sparse", "dense", "hybrid"])
def test_exact_names_rank_their_concept_first(mode: str, tiny_table, minilm, parts) -> None:  # type: ignore[no-untyped-def]
    retriever = _retriever(tiny_table, minilm, parts, mode)
    results = retriever.retrieve(["breast cancer", "huntington chorea", "multiple myeloma"], k=3)
    assert [r[0].concept_id for r in results] == ["D001943", "D006816", "D009101"]
    assert all(isinstance(c, Candidate) for r in results for c in r)


def test_hybrid_candidates_are_concepts_not_names(tiny_table, minilm, parts) -> None:  # type: ignore[no-untyped-def]
    (cands,) = _retriever(tiny_table, minilm, parts, "hybrid").retrieve(["diabetes mellitus type 2"], k=8)
    ids = [c.concept_id for c in cands]
    assert len(ids) == len(set(ids)) == 8  # every concept of the tiny dictionary once
    assert ids[0] == "D003924"
    assert cands[0].name == "Diabetes Mellitus, Type 2"  # the raw name that matched best
    assert [c.score for c in cands] == sorted((c.score for c in cands), reverse=True)


def test_hybrid_score_is_scaled_dense_plus_lambda_sparse(tiny_table, minilm, parts) -> None:  # type: ignore[no-untyped-def]
    retriever = _retriever(tiny_table, minilm, parts, "hybrid")
    (cands,) = retriever.retrieve(["ovary cancer"], k=2)
    for c in cands:
        assert c.score == pytest.approx(20.0 * c.dense + 2.0 * c.sparse, rel=1e-5)
    assert cands[0].concept_id == "D010051"


def test_a_misspelling_is_recovered_by_the_sparse_scores(tiny_table, minilm, parts) -> None:  # type: ignore[no-untyped-def]
    (cands,) = _retriever(tiny_table, minilm, parts, "sparse").retrieve(["colorectal carcinomma"], k=1)
    assert cands[0].concept_id == "D015179"


def test_duplicate_queries_get_the_same_answer(tiny_table, minilm, parts) -> None:  # type: ignore[no-untyped-def]
    a, b = _retriever(tiny_table, minilm, parts, "hybrid").retrieve(["myeloma", "myeloma"], k=2)
    assert a == b


def test_a_mode_without_its_parts_is_refused(tiny_table) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="needs an encoder"):
        HybridRetriever(tiny_table, SparseEncoder().fit(tiny_table.names), None, None, RetrievalConfig(mode="hybrid"))


def test_with_one_torch_thread_the_sparse_search_runs_beside_and_answers_the_same(tiny_table, minilm, parts) -> None:  # type: ignore[no-untyped-def]
    import torch

    queries = ["breast cancer", "diabetes mellitus type 2", "colorectal carcinomma", "myeloma"]
    retriever = _retriever(tiny_table, minilm, parts, "hybrid")
    inline = retriever.retrieve(queries, k=5)  # the suite's 2 threads: the sparse search runs here
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as a web process serves: the sparse search runs on a pool thread
    try:
        beside = retriever.retrieve(queries, k=5)
    finally:
        torch.set_num_threads(threads)
    assert [[c.concept_id for c in r] for r in beside] == [[c.concept_id for c in r] for r in inline]
    assert [[round(c.score, 4) for c in r] for r in beside] == [[round(c.score, 4) for c in r] for r in inline]
