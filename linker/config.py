"""A linker's configuration: text processing, retrieval, the dense index, the encoder's precision and batch size.
Saved in the artifact's config.json (:mod:`linker.artifact`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from linker.index_kinds import IndexConfig
from linker.retrieval import RetrievalConfig
from linker.text import TextConfig

__all__ = ["LinkerConfig"]


@dataclass(frozen=True)
class LinkerConfig:
    text: TextConfig = field(default_factory=TextConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    index: IndexConfig = field(default_factory=IndexConfig)
    quantize: bool = False  # int8 dynamic quantisation of the encoder for CPU inference
    encode_batch_size: int = 512

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text.to_dict(),
            "retrieval": asdict(self.retrieval),
            "index": asdict(self.index),
            "quantize": self.quantize,
            "encode_batch_size": self.encode_batch_size,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LinkerConfig:
        return cls(
            text=TextConfig.from_dict(data.get("text", {})),
            retrieval=RetrievalConfig(**data.get("retrieval", {})),
            index=IndexConfig(**data.get("index", {})),
            quantize=bool(data.get("quantize", False)),
            encode_batch_size=int(data.get("encode_batch_size", 512)),
        )
