"""Loading a saved name encoder of any kind (:data:`linker.encoders.base.ENCODER_KINDS`) by its ``encoder.json``.

Kept apart from :mod:`linker.encoders.base`, which every encoder imports for the protocol: this module
imports every encoder.
"""

from __future__ import annotations

from pathlib import Path

import torch

from linker.encoders.base import ENCODER_KINDS, NameEncoder, encoder_kind
from linker.encoders.bne import BNEEncoder
from linker.encoders.dan import DANEncoder
from linker.encoders.transformer import TransformerEncoder

__all__ = ["load_encoder"]


def load_encoder(folder: str | Path, quantize: bool = False, device: torch.device | str | None = None) -> NameEncoder:
    """Load a saved encoder of any kind. ``quantize`` (int8 inference) applies to transformers only, and so does
    ``device`` (None: the CPU; see :func:`linker.device.choose_device`): BNE and DAN encode a name in microseconds
    on a CPU, where their word-vector lookups live, and stay there."""
    kind = encoder_kind(folder)
    if kind == "transformer":
        return TransformerEncoder.load(folder, quantize=quantize, device=device)
    if kind == "bne":
        return BNEEncoder.load(folder)
    if kind == "dan":
        return DANEncoder.load(folder)
    raise ValueError(f"{folder}: unknown encoder kind {kind!r} (known: {', '.join(ENCODER_KINDS)})")
