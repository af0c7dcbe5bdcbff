"""One device choice for training, index builds, evaluation and linking (linker.device): LINKER_DEVICE forces it,
auto takes CUDA only where torch sees a GPU; on the CPU the vectors are those of the CPU path as it always was, and
a build records where it encoded."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from linker.device import CPU_ENCODE_BATCH, CUDA_ENCODE_BATCH, choose_device, device_label, encode_batch_size
from linker.encoders.transformer import TransformerEncoder

NAMES = ["breast cancer", "type 2 diabetes mellitus with peripheral angiopathy", "AT", "myeloma", "ovary tumour",
         "adult onset diabetes", "Louis-Bar syndrome", "colorectal carcinoma"] * 12  # 96 names: two CPU batches


# --- the choice ------------------------------------------------------------------------------------------------


def test_linker_device_cpu_forces_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LINKER_DEVICE", "cpu")
    assert choose_device() == torch.device("cpu")
    # Training chooses through the same function (linker.train re-exports it; Trainer and resolve_scope use it).
    from linker.train import Trainer, TrainerConfig, resolve_scope
    from linker.train import choose_device as training_choice

    assert training_choice is choose_device
    assert Trainer(TrainerConfig()).device == torch.device("cpu")
    assert resolve_scope("auto") == "student"


@pytest.mark.parametrize("value", [None, "", "auto", " AUTO "])
def test_auto_takes_cuda_only_where_torch_sees_a_gpu(monkeypatch: pytest.MonkeyPatch, value: str | None) -> None:
    if value is None:
        monkeypatch.delenv("LINKER_DEVICE", raising=False)
    else:
        monkeypatch.setenv("LINKER_DEVICE", value)
    assert choose_device() == torch.device("cuda" if torch.cuda.is_available() else "cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert choose_device() == torch.device("cpu")


def test_an_explicit_device_wins_over_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LINKER_DEVICE", "cuda:3")  # never read: the caller said cpu
    assert choose_device("cpu") == torch.device("cpu")
    monkeypatch.setenv("LINKER_DEVICE", "cpu")
    assert choose_device("auto") == torch.device("cpu")  # auto given explicitly still honours the variable


@pytest.mark.parametrize("value", ["gpu", "cuda:x", "tpu-ish"])
def test_a_malformed_linker_device_is_named(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("LINKER_DEVICE", value)
    with pytest.raises(ValueError, match=rf"LINKER_DEVICE='{value}' is not a device: use auto, cpu, cuda or cuda:N"):
        choose_device()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_linker_device_cuda_without_a_gpu_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LINKER_DEVICE", "cuda")
    with pytest.raises(ValueError, match="LINKER_DEVICE='cuda', but torch sees no CUDA device here"):
        choose_device()


def test_batch_sizes_follow_the_device() -> None:
    assert encode_batch_size("cpu", 512) == CPU_ENCODE_BATCH == 64
    assert encode_batch_size("cpu", 16) == 16
    assert encode_batch_size("cuda", 512) == CUDA_ENCODE_BATCH == 1024
    assert encode_batch_size("cuda:1", 4096) == 4096
    assert device_label("cpu") == "cpu"


# --- the vectors on the CPU ------------------------------------------------------------------------------------


def _reference(encoder: TransformerEncoder, texts: list[str], batch: int) -> np.ndarray:
    """The CPU encoding as it was before devices were chosen: length-sorted batches, mean pooling on the CPU, then
    the head and L2 normalisation on the CPU."""
    out = np.zeros((len(texts), encoder.dim), dtype=np.float32)
    order = np.argsort([len(t) for t in texts], kind="stable")
    encoder.model.eval()
    with torch.inference_mode():
        for start in range(0, len(texts), batch):
            idx = order[start : start + batch]
            tokens = encoder.tokenizer([texts[i] for i in idx], padding=True, truncation=True,
                                       max_length=encoder.max_length, return_tensors="pt")
            tokens = {k: v for k, v in tokens.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
            hidden = encoder.model(**tokens).last_hidden_state
            mask = tokens["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = ((hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)).float()
            if encoder.head is not None:
                pooled = encoder.head(pooled)
            out[idx] = torch.nn.functional.normalize(pooled, dim=-1).numpy()
    return out


def test_cpu_vectors_are_those_of_the_cpu_path(minilm: TransformerEncoder) -> None:
    assert minilm.place("cpu") == torch.device("cpu")
    assert minilm.run_batch_size(512) == CPU_ENCODE_BATCH
    assert np.array_equal(minilm.encode(NAMES, batch_size=512), _reference(minilm, NAMES, CPU_ENCODE_BATCH))


def test_cpu_vectors_with_a_head_are_those_of_the_cpu_path(minilm: TransformerEncoder) -> None:
    encoder = copy.deepcopy(minilm)
    head = encoder.add_head(64)
    torch.manual_seed(0)
    torch.nn.init.normal_(head.down.weight, std=0.05)  # a trained head moves the vectors; a new one would not
    assert np.array_equal(encoder.encode(NAMES), _reference(encoder, NAMES, CPU_ENCODE_BATCH))
    features = encoder.features(NAMES)
    assert np.array_equal(encoder.project_numpy(features), encoder.encode(NAMES))


def test_a_quantised_encoder_stays_on_the_cpu(minilm: TransformerEncoder) -> None:
    encoder = copy.deepcopy(minilm)
    encoder.quantize()
    assert encoder.place("cpu") == torch.device("cpu")
    assert encoder.encode_device == torch.device("cpu")


# --- the build records its device ------------------------------------------------------------------------------


def test_a_build_records_its_device_and_batch_in_the_artifact(minilm: TransformerEncoder, tiny_table, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from linker.linker import Linker

    linker = Linker.build(tiny_table, minilm)
    assert linker.metadata["encode_device"] == "cpu"
    assert linker.metadata["encode_batch_size"] == CPU_ENCODE_BATCH
    linker.save(tmp_path / "artifact")
    saved = json.loads((tmp_path / "artifact" / "config.json").read_text())
    assert saved["metadata"]["encode_device"] == "cpu"
    assert saved["metadata"]["encode_batch_size"] == CPU_ENCODE_BATCH
    loaded = Linker.load(tmp_path / "artifact", device="cpu")
    assert isinstance(loaded.encoder, TransformerEncoder) and loaded.encoder.device == torch.device("cpu")
    assert np.array_equal(loaded.encoder.encode(NAMES[:8]), minilm.encode(NAMES[:8]))


def test_the_cli_build_encodes_where_linker_device_says(monkeypatch: pytest.MonkeyPatch, tiny_dictionary_file: Path,
                                                          tmp_path: Path) -> None:
    from linker.cli import build_index_main

    monkeypatch.setenv("LINKER_DEVICE", "cpu")
    result = build_index_main(tiny_dictionary_file, tmp_path / "index")
    assert result["encode_device"] == "cpu"
    assert result["encode_batch_size"] == CPU_ENCODE_BATCH
    saved = json.loads((tmp_path / "index" / "config.json").read_text())
    assert saved["metadata"]["encode_device"] == "cpu"
    # A malformed variable stops the build before anything is written.
    monkeypatch.setenv("LINKER_DEVICE", "gpu")
    with pytest.raises(ValueError, match="LINKER_DEVICE='gpu' is not a device"):
        build_index_main(tiny_dictionary_file, tmp_path / "other")
    assert not (tmp_path / "other").exists()
