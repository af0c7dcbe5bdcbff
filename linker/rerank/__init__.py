"""LATTE (Zhu et al., AAAI 2020): re-ranking the retriever's top-k with context, latent and known types.

    MentionContext (query + the mention in its window)  ─┐
                                                        ├─ TokenStates (the linker's transformer, frozen)
    candidate names                                     ─┘        │
                                                        LatteModel: BiLSTM ─ cross-attention ─ f
                                                                   latent types (softmax over K) ─ g = cos
                                                                   known-type classifier (auxiliary loss)
                                                                   r = w_f·f + w_g·g + w_s·retriever features
    Reranker: the trained model + its latent-type summaries, saved as ``rerank/`` inside a linker artifact.

A linker without ``rerank/`` ranks as before; a re-ranker that does not match its linker is refused with a
reason (:class:`RerankerError`) and the linker falls back to the retriever's ranking.

The re-ranker (torch) is imported when :class:`Reranker` or :class:`RerankerError` is asked for: the spans and
results above are plain data, which a web process reads without loading torch (issue #45).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from linker.rerank.context import MentionContext, MentionSpan, mention_context
from linker.rerank.results import CandidateTyping, LatentTypeSummary, LinkedMention, latent_usage

if TYPE_CHECKING:
    from linker.rerank.reranker import Reranker, RerankerError

__all__ = [
    "CandidateTyping",
    "LatentTypeSummary",
    "LinkedMention",
    "MentionContext",
    "MentionSpan",
    "Reranker",
    "RerankerError",
    "latent_usage",
    "mention_context",
]


def __getattr__(name: str) -> Any:
    if name in ("Reranker", "RerankerError"):
        from linker.rerank import reranker

        return getattr(reranker, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
