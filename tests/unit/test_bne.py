"""BNE (Phan et al., ACL 2019): the encoder's shapes, its fast inference path, its folder, its training
objective on a toy dictionary, and the ``bne`` training method end to end."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import torch

from linker.data import ConceptRecord, Synonym
from linker.dictionary import NameTable
from linker.encoders.bne import BNEConfig, BNEEncoder
from linker.encoders.registry import load_encoder
from linker.encoders.wordvec import FastTextConfig, WordVectors, tokenize
from linker.methods.bne import BNEExamples, BNERecipeConfig, BNETask

SMALL = BNEConfig(char_dim=8, char_hidden=8, word_hidden=12)

CONCEPTS = {
    "D001943": ["breast neoplasms", "breast cancer", "breast tumor", "mammary carcinoma"],
    "D010051": ["ovarian neoplasms", "ovarian cancer", "ovary tumour"],
    "D003920": ["diabetes mellitus", "diabetes"],
    "D006816": ["huntington disease", "huntington chorea", "huntingtons disease"],
    "D009101": ["multiple myeloma", "myeloma", "plasma cell myeloma"],
    "D001260": ["ataxia telangiectasia"],  # one name: no synonym pair
}
TEXTS = [
    "Mutations in BRCA1 raise the risk of breast cancer and ovarian cancer.",
    "Huntington disease is a neurodegenerative disorder with chorea.",
    "Multiple myeloma is a cancer of plasma cells in the bone marrow.",
    "Type 2 diabetes mellitus and ataxia telangiectasia were studied.",
]


def _table() -> NameTable:
    records = [ConceptRecord(cid, names[0], tuple(Synonym(n) for n in names[1:])) for cid, names in CONCEPTS.items()]
    return NameTable.from_records(records)


@pytest.fixture(scope="module")
def vectors() -> WordVectors:
    torch.set_num_threads(1)
    names = [n for names in CONCEPTS.values() for n in names]
    return WordVectors.train(TEXTS + names, FastTextConfig(dim=16, epochs=2, workers=1, bucket=2000))


@pytest.fixture(scope="module")
def random_vectors(tmp_path_factory: pytest.TempPathFactory) -> WordVectors:
    """Word vectors of a realistic scale (fastText on four sentences barely leaves its initial ~0.02
    norms, which leave L_def and L_ctx nothing to learn): random, norm about 4, from a .vec file."""
    words = sorted({w for names in CONCEPTS.values() for n in names for w in tokenize(n)} | {"carcinoma"})
    rng = np.random.default_rng(0)
    lines = [f"{len(words)} 16"] + [w + " " + " ".join(f"{x:.4f}" for x in rng.normal(size=16)) for w in words]
    path = tmp_path_factory.mktemp("vectors") / "toy.vec"
    path.write_text("\n".join(lines) + "\n")
    return WordVectors.from_file(path)


@pytest.fixture()
def encoder(vectors: WordVectors) -> BNEEncoder:
    torch.manual_seed(0)
    return BNEEncoder(vectors, SMALL).eval()


def test_forward_is_batch_by_dim_and_encode_gives_unit_rows(encoder: BNEEncoder) -> None:
    assert encoder.forward(["breast cancer", "myeloma", "plasma cell myeloma"]).shape == (3, 16)
    vecs = encoder.encode(["breast cancer", "myeloma", "plasma cell myeloma", "ovary tumour"])
    assert vecs.shape == (4, 16) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)


def test_inference_path_matches_the_training_forward(encoder: BNEEncoder) -> None:
    names = ["breast cancer", "huntingtons disease", "a very long name of many words " * 3, "x"]
    with torch.no_grad():
        ref = encoder(names)
    ref = ref / ref.norm(dim=-1, keepdim=True)
    np.testing.assert_allclose(encoder.encode(names), ref.numpy(), atol=1e-5)


def test_the_recurrence_is_nn_lstm_with_padded_rows_masked() -> None:
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    from linker.encoders.recurrence import LSTMDirection

    torch.manual_seed(0)
    lstm = torch.nn.LSTM(5, 7, batch_first=True, bidirectional=True)
    x, lengths = torch.randn(3, 4, 5), torch.tensor([4, 1, 3])
    with torch.no_grad():
        out, (last, _) = lstm(pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False))
        out = pad_packed_sequence(out, batch_first=True, padding_value=float("-inf"))[0]  # [3, 4, 14]
        for k, suffix in enumerate(("", "_reverse")):
            direction = LSTMDirection(lstm, suffix, detach=True)
            inputs = x @ direction.w_ih_t + direction.bias  # [3, 4, 28]
            final = direction.run(inputs, reverse=bool(k), pool=False, lengths=lengths)
            pooled = direction.run(inputs, reverse=bool(k), pool=True, lengths=lengths)
            torch.testing.assert_close(final, last[k])
            torch.testing.assert_close(pooled, out[..., 7 * k : 7 * (k + 1)].max(dim=1).values)


def test_the_word_cache_never_changes_a_vector(encoder: BNEEncoder) -> None:
    names = ["breast cancer", "ovary tumour", "plasma cell myeloma", "breast tumor", "huntington chorea"]
    alone = encoder.encode(names)
    encoder.train().eval()  # drops the cache
    encoder.word_cache_size = 4  # overflows: the cache restarts, or keeps nothing for a call of more words
    pieces = np.concatenate([encoder.encode(names[:2]), encoder.encode(names[2:3]), encoder.encode(names[3:])])
    np.testing.assert_allclose(pieces, alone, atol=1e-6)
    np.testing.assert_allclose(encoder.encode(names), alone, atol=1e-6)
    assert len(encoder._word_rows) <= 4


def test_a_name_without_words_is_the_zero_vector(encoder: BNEEncoder) -> None:
    vecs = encoder.encode(["", "--", "breast cancer"])
    assert np.isfinite(vecs).all()
    assert not vecs[:2].any() and np.linalg.norm(vecs[2]) == pytest.approx(1.0, abs=1e-5)
    assert not encoder.forward(["?!"]).any()


def test_unseen_words_get_finite_nonzero_vectors(encoder: BNEEncoder, vectors: WordVectors) -> None:
    assert "cardiomyopathyy" not in vectors
    vec = encoder.encode(["hypertrophic cardiomyopathyy"])[0]
    assert np.isfinite(vec).all() and np.linalg.norm(vec) == pytest.approx(1.0, abs=1e-5)


def test_save_and_load_reproduce_the_vectors_and_load_encoder_dispatches(encoder: BNEEncoder, tmp_path: Path) -> None:
    names = ["breast cancer", "plasma cell myeloma", "unseenword disorder"]
    encoder.save(tmp_path / "bne")
    loaded = load_encoder(tmp_path / "bne")
    assert isinstance(loaded, BNEEncoder) and loaded.kind == "bne" and loaded.config == SMALL
    np.testing.assert_array_equal(loaded.encode(names), encoder.encode(names))
    assert loaded.fingerprint() == encoder.fingerprint()


@pytest.mark.parametrize("negatives", [1, 4])
def test_training_lowers_the_bne_loss_on_a_toy_dictionary(random_vectors: WordVectors, negatives: int) -> None:
    torch.manual_seed(0)
    vectors = random_vectors
    encoder = BNEEncoder(vectors, BNEConfig(char_dim=8, char_hidden=8, word_hidden=12, dropout=0.0))
    examples = BNEExamples(_table(), [("breast carcinoma", "D001943")], vectors)
    task = BNETask(encoder, examples, BNERecipeConfig(bne=encoder.config, lr=1e-2, negatives=negatives))
    rows = list(range(len(examples)))

    def loss() -> dict[str, float]:  # the same synonyms and in-batch negatives each time
        task.rng = random.Random(1)
        torch.manual_seed(1)
        with torch.no_grad():
            total, parts = task.batch_loss(rows)
        return {"total": float(total), **parts}

    before = loss()
    for _ in range(30):
        value, parts = task.batch_loss(rows)
        task.optimizer.zero_grad()
        value.backward()
        task.optimizer.step()
    after = loss()
    assert set(parts) == {"syn", "def", "ctx"}
    assert after["total"] < 0.7 * before["total"]
    assert all(after[k] < before[k] for k in ("syn", "def", "ctx")), (before, after)


def test_bne_method_writes_an_artifact_the_linker_loads(tmp_path: Path) -> None:
    from linker.linker import Linker
    from linker.methods.base import TrainingInputs
    from linker.recipe import train

    pairs = [("breast carcinoma", "D001943"), ("huntington s disease", "D006816"), ("myelomas", "D009101")]
    inputs = TrainingInputs(table=_table(), pairs=pairs, concept_counts={"D001943": 2}, out=tmp_path / "art",
                            texts=TEXTS)
    config = BNERecipeConfig(bne=SMALL, fasttext=FastTextConfig(dim=16, epochs=2, workers=1, bucket=2000),
                             epochs=2, threads=1, dev_share=0.5)
    out, report = train("bne", inputs, config)
    assert report["method"] == "bne" and len(report["history"]) == 2 and report["names_per_s"] > 0
    linker = Linker.load(out)
    assert isinstance(linker.encoder, BNEEncoder)
    best = linker.link_mentions(["breast cancer", "myeloma"], k=3)
    assert [cands[0].concept_id for cands in best] == ["D001943", "D009101"]
