from __future__ import annotations

import numpy as np
import pytest

from linker.index import DenseIndex
from linker.index_kinds import IndexConfig


def _unit(rng: np.random.Generator, n: int, d: int = 16) -> np.ndarray:
    v = rng.standard_normal((n, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf"])
def test_each_vector_finds_its_own_row(kind: str) -> None:
    vectors = _unit(np.random.default_rng(0), 200)
    rows = np.arange(1000, 1200)
    index = DenseIndex.build(vectors, rows, IndexConfig(kind=kind, ivf_nprobe=64))  # type: ignore[arg-type]
    scores, found = index.search(vectors[:20], 3)
    assert found.shape == (20, 3)
    assert (found[:, 0] == rows[:20]).all()
    np.testing.assert_allclose(scores[:, 0], 1.0, atol=1e-5)


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf"])
def test_save_load_round_trip_gives_identical_results(kind: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(1)
    vectors, queries = _unit(rng, 300), _unit(rng, 10)
    index = DenseIndex.build(vectors, config=IndexConfig(kind=kind))  # type: ignore[arg-type]
    index.save(tmp_path / "ix")
    loaded = DenseIndex.load(tmp_path / "ix")
    assert len(loaded) == 300 and loaded.config == index.config
    for a, b in zip(index.search(queries, 5), loaded.search(queries, 5), strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_row_indexed_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="each indexed once"):
        DenseIndex.build(_unit(np.random.default_rng(3), 2), np.array([4, 4]))


def test_pair_scores_are_inner_products_and_minus_inf_for_padding() -> None:
    vectors = _unit(np.random.default_rng(5), 10)
    index = DenseIndex.build(vectors)
    rows = np.array([[3, 7, -1]])
    scores = index.pair_scores(vectors[3:4], rows)
    np.testing.assert_allclose(scores[0, :2], [1.0, vectors[7] @ vectors[3]], atol=1e-5)
    assert scores[0, 2] == -np.inf


def test_search_on_an_empty_index_returns_minus_one_rows() -> None:
    index = DenseIndex(8)
    _, rows = index.search(np.zeros((2, 8), np.float32), 3)
    assert (rows == -1).all()


# --- quantised kinds and the float16 copy: millions of names in a few GB ----------------------------------------


def _clustered(rng: np.random.Generator, n: int, d: int = 32, centres: int = 64) -> np.ndarray:
    """Unit vectors around a few centres, like names around their concepts' meaning (uniform noise is the worst
    case for any quantiser and like no dictionary)."""
    c = _unit(rng, centres, d)
    v = c[rng.integers(0, centres, n)] + 0.15 * rng.standard_normal((n, d)).astype(np.float32)
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("config", [IndexConfig(kind="ivfpq", pq_bits=6, pq_m=8, ivf_nprobe=64),
                                    IndexConfig(kind="hnsw", hnsw_storage="sq8")], ids=["ivfpq", "hnsw-sq8"])
def test_a_quantised_index_returns_exact_scores_in_exact_order_and_finds_most_true_neighbours(config: IndexConfig) -> None:
    rng = np.random.default_rng(4)
    vectors, queries = _clustered(rng, 6000), _clustered(rng, 50)
    exact = DenseIndex.build(vectors)
    index = DenseIndex.build(vectors, config=config)
    scores, rows = index.search(queries, 10)
    # Re-ranked with the kept vectors: each score is the true inner product, best first.
    np.testing.assert_allclose(scores, np.einsum("qd,qkd->qk", queries, vectors[rows]), rtol=1e-5, atol=1e-5)
    assert (np.diff(scores, axis=1) <= 1e-6).all()
    _, truth = exact.search(queries, 10)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(rows.tolist(), truth.tolist(), strict=True)])
    assert recall >= 0.85, recall  # 6-bit codes on 32 dimensions; the bench measures real names (bench/scale.py)


def test_an_ivfpq_index_refuses_too_few_vectors_to_train_on() -> None:
    with pytest.raises(ValueError, match=r"needs at least 9,984 vectors to train on, got 500: use flat or hnsw"):
        DenseIndex.build(_unit(np.random.default_rng(5), 500), config=IndexConfig(kind="ivfpq"))


def test_pq_subquantisers_divide_the_dimension() -> None:
    from linker.index_kinds import pq_subquantisers

    assert pq_subquantisers(384) == 48 and pq_subquantisers(384, 64) == 64 and pq_subquantisers(100) == 10
    assert pq_subquantisers(768, 100) == 96


def test_unknown_kinds_and_storages_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown index kind 'annoy'"):
        IndexConfig(kind="annoy")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="vector_dtype is auto, float32 or float16"):
        IndexConfig(vector_dtype="int8")  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["flat", "ivfpq"])
def test_a_float16_copy_halves_the_memory_and_round_trips(kind: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(6)
    vectors, queries = _clustered(rng, 6000), _clustered(rng, 20)
    config = IndexConfig(kind=kind, vector_dtype="float16", pq_bits=6)  # type: ignore[arg-type]
    index = DenseIndex.build(vectors, config=config)
    assert index._vectors.dtype == np.float16 and index._vectors.nbytes == vectors.nbytes // 2
    scores, rows = index.search(queries, 5)
    np.testing.assert_allclose(scores, np.einsum("qd,qkd->qk", queries, vectors[rows]), atol=2e-3)
    np.testing.assert_allclose(index.pair_scores(queries[:2], rows[:2]), scores[:2], atol=1e-6)
    index.save(tmp_path / "ix")
    loaded = DenseIndex.load(tmp_path / "ix")
    assert loaded._vectors.dtype == np.float16
    for a, b in zip(index.search(queries, 5), loaded.search(queries, 5), strict=True):
        np.testing.assert_array_equal(a, b)


def test_pair_scores_of_rows_the_index_does_not_hold_are_minus_inf() -> None:
    index = DenseIndex.build(_unit(np.random.default_rng(7), 4), rows=np.array([0, 1, 5, 6]))
    out = index.pair_scores(_unit(np.random.default_rng(8), 1), np.array([[0, 3, 9, -1]]))
    assert np.isfinite(out[0, 0]) and np.isneginf(out[0, 1:]).all()


def test_auto_is_exact_for_a_dictionary_and_a_float16_graph_for_millions() -> None:
    from linker.index_kinds import AUTO_GRAPH_FROM

    index = DenseIndex.build(_unit(np.random.default_rng(9), 50))
    assert index.config.kind == "flat" and index.config.vector_dtype == "float32"
    big = IndexConfig().resolved(AUTO_GRAPH_FROM)
    assert (big.kind, big.vector_dtype) == ("hnsw", "float16")
    assert IndexConfig(kind="ivfpq").resolved(AUTO_GRAPH_FROM * 10).kind == "ivfpq"  # an explicit kind stays
