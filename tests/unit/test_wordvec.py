"""Word vectors: fastText training on a toy corpus, a user's files read or refused with the reason, the round trip."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from linker.data import iter_texts
from linker.encoders.wordvec import FastTextConfig, WordVectors, WordVectorsError, sentences, tokenize

CORPUS = [
    "Breast cancer is a malignant neoplasm of the breast. Ovarian cancer shares BRCA1 mutations with it.",
    "Lung cancer and pulmonary neoplasms follow smoking; small cell lung carcinoma is aggressive.",
    "Diabetes mellitus type 2 raises the risk of cardiomyopathy and renal failure.",
] * 20
TINY = FastTextConfig(dim=12, epochs=2, workers=1, bucket=5000)


@pytest.fixture(scope="module")
def vectors() -> WordVectors:
    return WordVectors.train(CORPUS, TINY)


def test_tokenize_and_sentences() -> None:
    assert tokenize("Non-Hodgkin's lymphoma (NHL), type 2") == ["non", "hodgkin", "s", "lymphoma", "nhl", "type", "2"]
    assert list(sentences(["A b. C d!\n\nE", "   "])) == [["a", "b"], ["c", "d"], ["e"]]


def test_training_gives_vectors_for_seen_and_unseen_words(vectors: WordVectors) -> None:
    assert vectors.dim == 12 and "cancer" in vectors and vectors.has_subwords
    unseen = vectors.vector("carcinomatosis")  # not in the corpus: composed from its n-grams
    assert unseen.shape == (12,) and np.isfinite(unseen).all() and np.abs(unseen).sum() > 0
    names = vectors.name_vectors(["breast cancer", "???", "lung carcinoma"])
    assert names.shape == (3, 12) and not names[1].any() and names[0].any()
    assert vectors.coverage(["breast cancer", "breast tumour"]) == pytest.approx(3 / 4)


def test_epoch_progress_is_reported() -> None:
    seen: list[tuple[int, int]] = []
    WordVectors.train(CORPUS[:3], TINY, lambda done, total: seen.append((done, total)))
    assert seen == [(1, 2), (2, 2)]


def test_an_empty_corpus_is_refused() -> None:
    with pytest.raises(WordVectorsError, match="no text"):
        WordVectors.train(["", "  ", "..."], TINY)


def test_save_load_round_trip(vectors: WordVectors, tmp_path: Path) -> None:
    vectors.save(tmp_path / "wv")
    loaded = WordVectors.load(tmp_path / "wv")
    assert WordVectors.is_folder(tmp_path / "wv") and loaded.source["source"] == "fasttext"
    for word in ("cancer", "carcinomatosis"):
        np.testing.assert_array_equal(loaded.vector(word), vectors.vector(word))
    with pytest.raises(WordVectorsError, match="not a word-vector folder"):
        WordVectors.load(tmp_path)


def _write_vec(path: Path, rows: list[str], header: str = "2 3") -> Path:
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


def test_a_vec_file_is_read_and_unseen_words_are_zero(tmp_path: Path) -> None:
    path = _write_vec(tmp_path / "a.vec", ["cancer 0.1 0.2 0.3", "tumour 0.3 0.2 0.1"])
    vectors = WordVectors.from_file(path)
    assert (vectors.dim, len(vectors), vectors.has_subwords) == (3, 2, False)
    assert not vectors.vector("carcinoma").any()
    assert vectors.source == {"source": "file", "file": "a.vec", "format": "vec"}


def test_a_fasttext_bin_file_keeps_its_ngrams(tmp_path: Path) -> None:
    from gensim.models import FastText
    from gensim.models.fasttext import save_facebook_model

    model = FastText(vector_size=8, min_count=1, bucket=1000, epochs=1, workers=1)
    corpus = [tokenize(t) for t in CORPUS[:3]]
    model.build_vocab(corpus_iterable=corpus)
    model.train(corpus_iterable=corpus, total_examples=len(corpus), epochs=1)
    save_facebook_model(model, str(tmp_path / "m.bin"))
    vectors = WordVectors.from_file(tmp_path / "m.bin")
    assert vectors.source["format"] == "fasttext-bin" and vectors.has_subwords
    assert vectors.vector("carcinomatosis").any()


@pytest.mark.parametrize(
    ("rows", "header", "message"),
    [
        (["cancer 0.1 0.2 0.3", "tumour 0.3 0.2"], "2 3", "line 3 has 2 values where the header says 3"),
        (["cancer 0.1 0.2 0.3"], "2 3", "truncated: the header announces 2 words, the file holds 1"),
        (["cancer 0.1 0.2 0.3"], "cancer 0.1 0.2 0.3", "first line must be '<words> <dimension>'"),
        (["cancer 0.1 nan 0.3", "tumour 0.3 0.2 0.1"], "2 3", "NaN or infinite"),
        (["cancer 0.1 zero 0.3", "tumour 0.3 0.2 0.1"], "2 3", "not a readable word-vector file"),
    ],
)
def test_bad_vec_files_are_refused_naming_the_fault(tmp_path: Path, rows: list[str], header: str, message: str) -> None:
    path = _write_vec(tmp_path / "bad.vec", rows, header)
    with pytest.raises(WordVectorsError, match=message) as info:
        WordVectors.from_file(path)
    assert "bad.vec" in str(info.value)


def test_missing_empty_truncated_bin_and_wrong_dimension(tmp_path: Path) -> None:
    with pytest.raises(WordVectorsError, match="no such file"):
        WordVectors.from_file(tmp_path / "absent.vec")
    (tmp_path / "empty.vec").write_bytes(b"")
    with pytest.raises(WordVectorsError, match="empty"):
        WordVectors.from_file(tmp_path / "empty.vec")
    good = _write_vec(tmp_path / "good.vec", ["cancer 0.1 0.2 0.3", "tumour 0.3 0.2 0.1"])
    with pytest.raises(WordVectorsError, match="dimension 3, but 200 are needed"):
        WordVectors.from_file(good, expected_dim=200)
    from gensim.models import FastText
    from gensim.models.fasttext import save_facebook_model

    model = FastText(vector_size=8, min_count=1, bucket=1000, epochs=1, workers=1)
    corpus = [tokenize(t) for t in CORPUS[:3]]
    model.build_vocab(corpus_iterable=corpus)
    model.train(corpus_iterable=corpus, total_examples=len(corpus), epochs=1)
    save_facebook_model(model, str(tmp_path / "m.bin"))
    data = (tmp_path / "m.bin").read_bytes()
    (tmp_path / "cut.bin").write_bytes(data[: len(data) // 2])
    with pytest.raises(WordVectorsError, match="cut.bin: not a readable word-vector file"):
        WordVectors.from_file(tmp_path / "cut.bin")


def test_iter_texts_reads_pubtator_and_plain_files(tmp_path: Path) -> None:
    pubtator = tmp_path / "docs.txt"
    pubtator.write_text("1|t|Breast cancer.\n1|a|It spreads.\n1\t0\t6\tBreast\tDisease\tD1\n\n", encoding="utf-8")
    assert list(iter_texts(pubtator)) == ["Breast cancer. It spreads."]
    plain = tmp_path / "lines.txt.gz"
    with gzip.open(plain, "wt", encoding="utf-8") as fh:
        fh.write("first line\n\nsecond line\n")
    assert list(iter_texts(plain)) == ["first line", "second line"]


def test_a_binary_header_promising_more_than_the_file_holds_is_refused_before_allocating(tmp_path: Path) -> None:
    path = tmp_path / "huge.bin"
    path.write_bytes(b"999999999 999999999\ncancer " + b"\x00" * 64)
    with pytest.raises(WordVectorsError, match="huge.bin: truncated or not word2vec: the header announces 999999999"):
        WordVectors.from_file(path)
