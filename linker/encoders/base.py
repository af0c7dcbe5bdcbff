"""What every name encoder offers the linker, and how a saved one is loaded back by its kind.

A name encoder maps names to L2-normalised float32 vectors; the linker's dense index, the hybrid retriever
and the candidate panel need nothing else. Three kinds exist:

    transformer   a Hugging Face model (BioSyn, HiPrBERT): accurate, milliseconds per name on a CPU
    bne           BiLSTM over characters and word vectors (Phan et al. 2019): microseconds per name
    dan           deep averaging network over word vectors (Fivez et al. 2021): microseconds per name

Each saves into a folder with an ``encoder.json`` whose ``kind`` says which class loads it (a folder
without ``kind`` is a transformer, as every artifact written before the word-vector encoders was);
:func:`linker.encoders.registry.load_encoder` reads any of them back.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["NameEncoder", "ENCODER_CONFIG", "ENCODER_KINDS", "WORD_VECTORS_FOLDER", "encoder_kind", "is_transformer",
           "save_word_vector_encoder", "read_word_vector_encoder"]

ENCODER_CONFIG = "encoder.json"
ENCODER_KINDS = ("transformer", "bne", "dan")
WORD_VECTORS_FOLDER = "wordvectors"  # the word vectors inside a BNE or DAN encoder folder


@runtime_checkable
class NameEncoder(Protocol):
    """Names in, unit vectors out. ``fingerprint`` is a digest of the weights (caches and re-rankers are
    keyed by it); ``save`` writes a folder that :func:`load_encoder` reads back."""

    @property
    def kind(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def encode(self, texts: Sequence[str], batch_size: int = 256) -> np.ndarray: ...

    def fingerprint(self) -> str: ...

    def save(self, folder: str | Path) -> None: ...


def encoder_kind(folder: str | Path) -> str:
    """The kind of encoder saved in ``folder`` (``transformer`` when encoder.json does not say)."""
    path = Path(folder) / ENCODER_CONFIG
    config: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    return str(config.get("kind", "transformer"))


def is_transformer(encoder: object) -> bool:
    return getattr(encoder, "kind", None) == "transformer"


def save_word_vector_encoder(folder: str | Path, module: Any, weights: str, meta: dict[str, Any]) -> None:
    """The folder of an encoder over word vectors (BNE, DAN): ``encoder.json`` (``meta``, with its ``kind``),
    the module's weights in ``weights`` and its word vectors under ``wordvectors/``."""
    import torch

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    module.word_vectors.save(folder / WORD_VECTORS_FOLDER)
    torch.save({k: v.detach().cpu() for k, v in module.state_dict().items()}, folder / weights)
    (folder / ENCODER_CONFIG).write_text(json.dumps(meta, indent=2, default=str) + "\n")


def read_word_vector_encoder(folder: str | Path, kind: str, weights: str) -> tuple[dict[str, Any], Any, dict[str, Any]]:
    """(``encoder.json``, word vectors, weights) of a folder written by :func:`save_word_vector_encoder`;
    ``ValueError`` naming the folder when it holds another kind of encoder."""
    import torch

    from linker.encoders.wordvec import WordVectors

    folder = Path(folder)
    meta: dict[str, Any] = json.loads((folder / ENCODER_CONFIG).read_text())
    if meta.get("kind") != kind:
        raise ValueError(f"{folder}: encoder kind {meta.get('kind')!r}, not {kind!r}")
    state = torch.load(folder / weights, map_location="cpu", weights_only=True)
    return meta, WordVectors.load(folder / WORD_VECTORS_FOLDER), state
