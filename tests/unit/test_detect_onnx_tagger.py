"""The tagger's ONNX runtimes: a real MiniLM token classifier (with dictionary features) exported to ONNX and run by
ONNX Runtime gives torch's label scores (fp32) or close ones (int8 weights); the export is cached by the weights'
content; windows pooled and run shortest first give the spans of windows run in order."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("onnxruntime")

from linker.detect import tagger as tagger_module  # noqa: E402
from linker.detect.gazetteer import FEATURES, Gazetteer  # noqa: E402
from linker.detect.onnx_tagger import cached_export, use_runtime, weights_digest  # noqa: E402
from linker.detect.tagger import Tagger  # noqa: E402

TEXTS = [
    "Breast cancer is common in women. Patients with diabetes were enrolled in a study of ovarian cancer.",
    "Huntington disease is inherited.",
    "Multiple myeloma responded to the drug; no effect was seen on colorectal cancer. " * 6,
]


@pytest.fixture(scope="module")
def tagger() -> Tagger:
    """An untrained tagger reading dictionary features, its feature vectors random so that they count."""
    torch.manual_seed(0)
    made = Tagger.from_base(max_length=32, stride=8, gazetteer=Gazetteer(["breast cancer", "diabetes", "ovarian cancer"]))
    assert made.feature_embedding is not None
    with torch.no_grad():
        made.feature_embedding.weight.copy_(torch.randn(FEATURES, made.feature_embedding.embedding_dim) * 0.5)
    return made


def _windows(t: Tagger) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    rows, feats = [], []
    for text in TEXTS:
        enc = t.encode(text)
        for start in t.windows(enc):
            rows.append(t.window_ids(enc, start))
            feats.append(t.window_features(enc, start))
    ids, mask = t.collate(rows)
    return ids, mask, t.collate_features(feats, ids.shape[1])


def test_onnx_in_fp32_gives_torchs_scores_and_int8_close_ones(tagger: Tagger, tmp_path: Path) -> None:
    ids, mask, feats = _windows(tagger)
    assert feats is not None and int(feats.max()) > 0  # the texts hold dictionary matches: features are read
    with torch.inference_mode():
        expected = tagger.logits(ids, mask, feats).numpy()
    try:
        use_runtime(tagger, "onnx", tmp_path)
        assert tagger.runtime is not None
        fp32 = tagger.runtime(ids.numpy(), mask.numpy(), feats.numpy())
        np.testing.assert_allclose(fp32, expected, atol=1e-3)
        use_runtime(tagger, "onnx-int8", tmp_path)
        int8 = tagger.runtime(ids.numpy(), mask.numpy(), feats.numpy())
        assert int8.shape == expected.shape
        real = mask.numpy().astype(bool)
        assert np.abs(int8 - expected)[real].mean() < 0.25
        with pytest.raises(ValueError, match="reads dictionary features"):
            tagger.runtime(ids.numpy(), mask.numpy(), None)
    finally:
        use_runtime(tagger, "torch")
    assert tagger.runtime is None


def test_the_export_is_cached_by_the_weights(tagger: Tagger, tmp_path: Path) -> None:
    first = cached_export(tagger, tmp_path, "onnx-int8")
    written = first.stat().st_mtime_ns
    assert cached_export(tagger, tmp_path, "onnx-int8") == first and first.stat().st_mtime_ns == written
    assert weights_digest(tagger) in first.name
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tagger")]  # no half-written file left
    with pytest.raises(ValueError, match="one of torch, onnx, onnx-int8"):
        use_runtime(tagger, "tensorrt", tmp_path)


def test_pooled_windows_give_the_spans_of_windows_run_in_order(tagger: Tagger, monkeypatch: pytest.MonkeyPatch) -> None:
    pooled = tagger.predict(TEXTS, batch_size=2)
    monkeypatch.setattr(tagger_module, "POOL_BATCHES", 1)
    in_order = tagger.predict(TEXTS, batch_size=2)
    assert [[(s.start, s.end) for s in spans] for spans in pooled] == [[(s.start, s.end) for s in spans] for spans in in_order]
    assert [[round(s.score, 5) for s in spans] for spans in pooled] == [[round(s.score, 5) for s in spans] for spans in in_order]
