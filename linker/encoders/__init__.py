"""Name encoders. ``transformer`` wraps a local Hugging Face model (MiniLM by default, SapBERT/PubMedBERT
when ``LINKER_BASE_MODEL`` points at one).

``from linker.encoders import TransformerEncoder`` imports the transformer module (torch, transformers) when it is
asked for, not when a light submodule (``linker.encoders.base``, ``linker.encoders.wordvec``'s configs) is: a
process that reads a config imports no torch (issue #45)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from linker.encoders.transformer import TransformerEncoder, default_base_model

__all__ = ["TransformerEncoder", "default_base_model"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from linker.encoders import transformer

        return getattr(transformer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
