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

__all__ = ["NameEncoder", "ENCODER_CONFIG", "ENCODER_KINDS", "encoder_kind", "is_transformer"]

ENCODER_CONFIG = "encoder.json"
ENCODER_KINDS = ("transformer", "bne", "dan")


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
