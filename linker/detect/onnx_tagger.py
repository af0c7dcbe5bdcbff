"""A trained tagger's transformer on ONNX Runtime, its weights quantized to 8 bits: the corpus-scale runtime.

Pre-annotating a corpus spends most of its time in the tagger's forward pass (bench/corpus.py's profile). The
same network exported to ONNX and its linear layers' weights quantized to int8 (dynamic quantization: activations
are quantized per batch as they come, so no calibration set is needed) reads about 2.4 times as many abstracts per
CPU-second as torch in fp32 on this project's 2-core machine, with the exact-span F1 of BC5CDR dev within the
issue's 1 point (bench/RESULTS.md, "tagger runtime").

:func:`export` writes the model (and, for a tagger that reads dictionary features, the addition of its feature
vectors to the token embeddings) as one ONNX graph with dynamic batch and length axes, then quantizes it.
:class:`OnnxLogits` runs it: a callable the :class:`~linker.detect.tagger.Tagger` uses in place of torch for
prediction (:func:`use_runtime`); training stays in torch. The exported files are a
cache keyed by the weights' content (:func:`cached_export`), so a tagger folder stays as its training wrote it,
and a host exports each tagger version once.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

if TYPE_CHECKING:
    from linker.detect.tagger import Tagger

__all__ = ["RUNTIMES", "OnnxLogits", "available", "cached_export", "export", "use_runtime"]

# "torch": the model as trained (fp32); "onnx": ONNX Runtime in fp32; "onnx-int8": ONNX Runtime, int8 weights.
RUNTIMES = ("torch", "onnx", "onnx-int8")
OPSET = 17


def available() -> bool:
    """Whether ONNX Runtime is installed (the ``onnx`` runtimes need it)."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


class _Forward(torch.nn.Module):
    """The tagger's forward pass as one module: token ids (and dictionary features) to label scores."""

    def __init__(self, model: Any, feature_embedding: torch.nn.Embedding | None) -> None:
        super().__init__()
        self.model = model
        self.feature_embedding = feature_embedding

    def forward(self, ids: torch.Tensor, mask: torch.Tensor, feats: torch.Tensor | None = None) -> torch.Tensor:
        if self.feature_embedding is None or feats is None:
            return self.model(input_ids=ids, attention_mask=mask).logits
        embeds = self.model.get_input_embeddings()(ids) + self.feature_embedding(feats)
        return self.model(inputs_embeds=embeds, attention_mask=mask).logits


def export(tagger: Tagger, path: str | Path, quantize: bool = True) -> Path:
    """The tagger's network as an ONNX file at ``path`` (int8 weights where ``quantize``); returns ``path``.
    Written under a temporary name and renamed, so a reader never sees half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    module = _Forward(tagger.model, tagger.feature_embedding).to("cpu").eval()
    features = tagger.feature_embedding is not None
    ids = torch.full((2, 16), tagger._pad, dtype=torch.long)
    mask = torch.ones((2, 16), dtype=torch.long)
    inputs: tuple[torch.Tensor, ...] = (ids, mask, torch.zeros((2, 16), dtype=torch.long)) if features else (ids, mask)
    names = ["ids", "mask", "feats"][: len(inputs)]
    axes = {name: {0: "batch", 1: "length"} for name in [*names, "logits"]}
    fp32 = path.with_name(f".{path.name}.{os.getpid()}.fp32")
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tracer's notes on Python conditions the graph does not depend on
            torch.onnx.export(module, inputs, str(fp32), input_names=names, output_names=["logits"],
                              dynamic_axes=axes, opset_version=OPSET, dynamo=False)
        written = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        if quantize:
            from onnxruntime.quantization import QuantType, quantize_dynamic

            quantize_dynamic(str(fp32), str(written), weight_type=QuantType.QInt8)
        else:
            fp32.replace(written)
        written.replace(path)
    finally:
        fp32.unlink(missing_ok=True)
        tagger.model.to(tagger.device)
        if tagger.feature_embedding is not None:
            tagger.feature_embedding.to(tagger.device)
    return path


def weights_digest(tagger: Tagger) -> str:
    """A digest of the tagger's weights (model and feature vectors): what an exported file was made from."""
    digest = hashlib.sha256()
    tensors = dict(tagger.model.state_dict())
    if tagger.feature_embedding is not None:
        tensors["__features__"] = tagger.feature_embedding.weight
    for name in sorted(tensors):
        digest.update(name.encode())
        digest.update(tensors[name].detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()[:24]


def cached_export(tagger: Tagger, cache_dir: str | Path, runtime: str) -> Path:
    """The tagger exported for ``runtime`` ("onnx" or "onnx-int8") under ``cache_dir``, exported now if this host
    has not yet (under a file lock: two processes starting together export once)."""
    import fcntl

    if runtime not in RUNTIMES[1:]:
        raise ValueError(f"runtime {runtime!r}: an ONNX runtime is one of {', '.join(RUNTIMES[1:])}")
    folder = Path(cache_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"tagger-{weights_digest(tagger)}-{runtime}.onnx"
    if path.exists():
        return path
    with open(folder / ".export.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            export(tagger, path, quantize=runtime == "onnx-int8")
    return path


class OnnxLogits:
    """Label scores from an exported tagger: ``(ids, mask, feats) -> (batch, length, labels)`` float32 arrays."""

    def __init__(self, path: str | Path, threads: int | None = None) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        # As many threads as torch was given (a worker process with concurrency > 1 sets 1), so processes on one
        # machine do not oversubscribe its cores.
        options.intra_op_num_threads = int(threads or torch.get_num_threads())
        options.inter_op_num_threads = 1
        self.path = Path(path)
        self.session = ort.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])
        self.reads_features = any(i.name == "feats" for i in self.session.get_inputs())

    def __call__(self, ids: np.ndarray, mask: np.ndarray, feats: np.ndarray | None = None) -> np.ndarray:
        inputs = {"ids": ids.astype(np.int64, copy=False), "mask": mask.astype(np.int64, copy=False)}
        if self.reads_features:
            if feats is None:
                raise ValueError(f"{self.path}: this tagger reads dictionary features: give each window's features")
            inputs["feats"] = feats.astype(np.int64, copy=False)
        return np.asarray(self.session.run(["logits"], inputs)[0], dtype=np.float32)


def use_runtime(tagger: Tagger, runtime: str, cache_dir: str | Path | None = None, threads: int | None = None) -> Tagger:
    """Make ``tagger`` predict with ``runtime`` (:data:`RUNTIMES`): "torch", or its network exported to ONNX (the
    export cached under ``cache_dir``, default ``var/cache/onnx``). Training is unaffected. Returns the tagger."""
    if runtime not in RUNTIMES:
        raise ValueError(f"tagger runtime {runtime!r}: one of {', '.join(RUNTIMES)}")
    if runtime == "torch":
        tagger.runtime, tagger.runtime_name = None, runtime
        return tagger
    if not available():
        raise ValueError(f"tagger runtime {runtime!r} needs ONNX Runtime: pip install onnxruntime")
    path = cached_export(tagger, cache_dir or Path("var/cache/onnx"), runtime)
    tagger.runtime, tagger.runtime_name = OnnxLogits(path, threads), runtime
    return tagger
