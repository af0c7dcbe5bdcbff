"""Character n-gram tf-idf: exact top-1 concepts on a tiny dictionary, and a save/load round trip."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from linker.sparse import SparseEncoder, _row_block

# (normalised name, concept id), as a NameTable would hold them.
NAMES = [
    ("breast cancer", "D001943"),
    ("breast neoplasms", "D001943"),
    ("ovarian cancer", "D010051"),
    ("ovarian neoplasms", "D010051"),
    ("colorectal cancer", "D015179"),
    ("hereditary nonpolyposis colorectal cancer", "D003123"),
    ("ataxia telangiectasia", "D001260"),
    ("duchenne muscular dystrophy", "D020388"),
    ("becker muscular dystrophy", "C537666"),
    ("myotonic dystrophy", "D009223"),
]


@pytest.fixture(scope="module")
def encoder() -> SparseEncoder:
    return SparseEncoder().fit([n for n, _ in NAMES])


def test_transform_is_float32_and_l2_normalised(encoder: SparseEncoder) -> None:
    x = encoder.transform(["breast cancer", "zzz unknown"])
    assert x.dtype == np.float32
    norms = np.sqrt(np.asarray(x.multiply(x).sum(axis=1))).ravel()
    assert norms[0] == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize(
    ("query", "concept"),
    [
        ("breast cancers", "D001943"),
        ("ovarian neoplasm", "D010051"),
        ("ataxia teleangiectasia", "D001260"),
        ("becker dystrophy", "C537666"),
        ("hereditary non polyposis colorectal cancer", "D003123"),
    ],
)
def test_top1_concept(encoder: SparseEncoder, query: str, concept: str) -> None:
    _, idx = encoder.top_k([query], k=1)
    assert NAMES[int(idx[0, 0])][1] == concept


def test_top_k_sorted_and_exact_match_scores_one(encoder: SparseEncoder) -> None:
    scores, idx = encoder.top_k(["myotonic dystrophy", "breast cancer"], k=4, batch_size=1)
    assert scores.shape == idx.shape == (2, 4)
    assert np.all(np.diff(scores, axis=1) <= 0)
    assert scores[0, 0] == pytest.approx(1.0, abs=1e-6)
    assert NAMES[int(idx[0, 0])][0] == "myotonic dystrophy"


def test_top_k_matches_brute_force_on_many_names() -> None:
    # Enough names for the block-max pruning path (more than 4 * k blocks of 64 rows).
    rng = np.random.default_rng(0)
    letters = list("abcdefghij ")
    names = ["".join(rng.choice(letters, size=rng.integers(5, 20))) for _ in range(3000)]
    enc = SparseEncoder(n_threads=2).fit(names)
    queries = names[:50] + ["abc def", "jjj"]
    scores, idx = enc.top_k(queries, k=5, batch_size=16)
    full = (enc.transform(queries) @ enc.transform(names).T).toarray()
    expected = -np.sort(-full, axis=1)[:, :5]
    np.testing.assert_allclose(scores, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.take_along_axis(full, idx, axis=1), scores, rtol=1e-5, atol=1e-6)


def test_row_blocks_share_the_matrix_and_equal_its_slices() -> None:
    matrix = sp.random(500, 40, density=0.1, format="csr", dtype=np.float32, random_state=1)
    for lo, hi in [(0, 500), (0, 128), (128, 384), (384, 500), (7, 7)]:
        block = _row_block(matrix, lo, hi)
        assert (block != matrix[lo:hi]).nnz == 0 and block.shape == (hi - lo, 40)
        if hi > lo:
            assert np.shares_memory(block.data, matrix.data)


def test_top_k_in_row_blocks_on_threads_matches_one_block() -> None:
    # 20,000 names or more are scored in row blocks on threads (the panel's one query on MEDIC-size dictionaries).
    rng = np.random.default_rng(1)
    letters = list("abcdefgh ")
    names = ["".join(rng.choice(letters, size=rng.integers(5, 15))) for _ in range(21000)]
    threaded = SparseEncoder(n_threads=2).fit(names)
    single = SparseEncoder(n_threads=1).fit(names)
    queries = names[:5] + ["abc def"]
    np.testing.assert_array_equal(threaded.top_k(queries, k=7)[1], single.top_k(queries, k=7)[1])


def test_k_larger_than_dictionary_shrinks(encoder: SparseEncoder) -> None:
    scores, idx = encoder.top_k(["cancer"], k=50)
    assert idx.shape == (1, len(NAMES))
    assert sorted(idx[0].tolist()) == list(range(len(NAMES)))


def test_score_of_given_candidates_matches_top_k(encoder: SparseEncoder) -> None:
    queries = ["breast cancers", "becker dystrophy"]
    scores, idx = encoder.top_k(queries, k=3)
    again = encoder.score(queries, idx)
    np.testing.assert_allclose(again, scores, rtol=1e-6)
    reversed_ = encoder.score(queries, idx[:, ::-1])
    np.testing.assert_allclose(reversed_, scores[:, ::-1], rtol=1e-6)


def test_save_load_round_trip_gives_identical_scores(encoder: SparseEncoder, tmp_path: Path) -> None:
    encoder.save(tmp_path / "sparse")
    assert not list((tmp_path / "sparse").glob("*.pkl"))
    loaded = SparseEncoder.load(tmp_path / "sparse")
    queries = ["breast cancers", "ataxia teleangiectasia", "unknown ngrams qqq"]
    s1, i1 = encoder.top_k(queries, k=5)
    s2, i2 = loaded.top_k(queries, k=5)
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_array_equal(s1, s2)
    assert (encoder.transform(queries) != loaded.transform(queries)).nnz == 0


def test_unfitted_encoder_refuses() -> None:
    with pytest.raises(RuntimeError):
        SparseEncoder().top_k(["x"], k=1)
    with pytest.raises(ValueError):
        SparseEncoder().fit([])


# --- without a kept matrix (a linker that does not search by tf-idf) ---------------------------------------


def _texts_encoder() -> tuple[SparseEncoder, list[str]]:
    texts = [n for n, _ in NAMES]
    return SparseEncoder().fit(texts, keep_matrix=False), texts


def test_scores_from_texts_equal_the_matrix_scores(encoder: SparseEncoder) -> None:
    from_texts, _ = _texts_encoder()
    assert not from_texts.keeps_matrix and encoder.keeps_matrix
    assert from_texts.n_names == len(NAMES)
    rows = np.array([[0, 1, 9, 0], [4, 5, 3, 3]])
    queries = ["breast cancers", "colorectal cancer"]
    np.testing.assert_allclose(from_texts.score(queries, rows), encoder.score(queries, rows), atol=1e-6)


def test_a_search_builds_the_matrix_once() -> None:
    enc, texts = _texts_encoder()
    _, idx = enc.top_k(["breast cancer"], k=2)
    assert enc.keeps_matrix and int(idx[0, 0]) == 0 and enc.n_names == len(texts)


def test_saved_without_a_matrix_and_loaded_with_the_texts(tmp_path: Path) -> None:
    enc, texts = _texts_encoder()
    enc.save(tmp_path)
    assert not (tmp_path / "sparse_names.npz").exists()
    with pytest.raises(ValueError, match="name table's texts"):
        SparseEncoder.load(tmp_path)
    with pytest.raises(ValueError, match="10 names saved, 2 texts given"):
        SparseEncoder.load(tmp_path, texts=texts[:2])
    back = SparseEncoder.load(tmp_path, texts=texts)
    rows = np.array([[2, 3, 7]])
    np.testing.assert_array_equal(back.score(["ovarian neoplasm"], rows), enc.score(["ovarian neoplasm"], rows))


def test_short_transforms_kept_per_text_stack_to_the_matrix_of_one_transform() -> None:
    from linker.sparse import SparseEncoder

    names = ["breast cancer", "lung cancer", "heart failure", "acute renal failure", "chronic heart disease"]
    enc = SparseEncoder().fit(names)
    queries = ["lung tumour", "breast cancer", "renal", "lung tumour", "zzz"]
    enc.transform(queries[1:3])  # some rows kept before
    kept = enc.transform(queries)
    whole = enc._transform(queries)
    assert kept.shape == whole.shape and (kept != whole).nnz == 0
    assert kept.indices.tolist() == whole.indices.tolist() and kept.data.tobytes() == whole.data.tobytes()
    enc.fit(["other names", "entirely"])  # a new vocabulary forgets the kept rows
    assert enc.transform(["lung tumour"]).shape[1] == len(enc.vocabulary)
