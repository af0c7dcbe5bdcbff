from __future__ import annotations

import numpy as np
import pytest

from linker.index import DenseIndex, IndexConfig


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


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf"])
def test_incremental_add_is_found_by_the_next_search(kind: str) -> None:
    rng = np.random.default_rng(2)
    index = DenseIndex.build(_unit(rng, 100), config=IndexConfig(kind=kind))  # type: ignore[arg-type]
    new = _unit(rng, 2)
    index.add(new, [500, 501])
    _, found = index.search(new, 1)
    assert found[:, 0].tolist() == [500, 501]
    np.testing.assert_allclose(index.vectors([501]), new[1:])


def test_adding_a_row_twice_is_refused() -> None:
    index = DenseIndex.build(_unit(np.random.default_rng(3), 5))
    with pytest.raises(ValueError, match="already indexed"):
        index.add(_unit(np.random.default_rng(4), 1), [2])


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
