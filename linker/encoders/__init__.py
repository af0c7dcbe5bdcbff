"""Name encoders. ``transformer`` wraps a local Hugging Face model (MiniLM by default, SapBERT/PubMedBERT
when ``LINKER_BASE_MODEL`` points at one)."""

from linker.encoders.transformer import TransformerEncoder, default_base_model

__all__ = ["TransformerEncoder", "default_base_model"]
