"""What linking a mention in its context returns: the final ranking and, when re-ranked, the types behind it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # linker.retrieval imports faiss and torch; these results are plain data (issue #45)
    from linker.retrieval import Candidate

__all__ = ["CandidateTyping", "LatentTypeSummary", "LinkedMention", "RANKED_BY_RETRIEVER", "RANKED_BY_LATTE",
           "latent_usage"]

RANKED_BY_RETRIEVER = "retriever"
RANKED_BY_LATTE = "latte"


@dataclass(frozen=True)
class LatentTypeSummary:
    """One latent type of a trained re-ranker, described for a human: the dictionary names most typical of
    it (highest probability among the names whose most likely type it is) and how many names it holds."""

    index: int
    count: int
    typical_names: tuple[str, ...]

    @property
    def label(self) -> str:
        """A short name for the panel: its first three typical names."""
        return " · ".join(self.typical_names[:3]) if self.typical_names else f"type {self.index}"


def latent_usage(summaries: Sequence[LatentTypeSummary]) -> dict[str, float]:
    """How the dictionary's names spread over the latent types (:func:`linker.rerank.training.latent_type_summaries`): how many
    types are some name's most likely type, the largest type's share of the names, and the effective number
    of types (the exponential of the entropy of that spread). Collapsed types show as a large share and an
    effective number near 1; K types used evenly give K."""
    counts = [s.count for s in summaries if s.count > 0]
    if not counts:
        return {"types_used": 0.0, "largest_share": 0.0, "effective_types": 0.0}
    total = sum(counts)
    shares = [c / total for c in counts]
    return {"types_used": float(len(counts)), "largest_share": round(max(shares), 4),
            "effective_types": round(math.exp(-sum(p * math.log(p) for p in shares)), 1)}


@dataclass(frozen=True)
class CandidateTyping:
    """Why a re-ranked candidate sits where it does (aligned with :attr:`LinkedMention.candidates`)."""

    latent_type: int  # the candidate's most likely latent type
    latent_probability: float
    known_types: tuple[str, ...]  # the concept's known types in the re-ranker's dictionary
    type_conflict: bool  # the mention's predicted known types and the concept's known types do not meet
    match: float  # f: the cross-attention matching score
    type_similarity: float  # g: cosine of the mention's and the candidate's latent-type distributions
    retriever_score: float
    retriever_rank: int  # 1-based rank within its part before re-ranking


@dataclass(frozen=True)
class LinkedMention:
    """One mention's candidates, ranked within each part (see :meth:`linker.linker.Linker.link_mentions`).

    ``candidates[i].score`` is the score that ranked it: the re-ranker's r when ``ranked_by`` is "latte",
    else the retriever's S. ``homonyms[i]`` lists the other concepts that own the candidate's matched name
    (one MEDIC name under a MeSH and an OMIM id): choosing between them is a convention, not a spelling.
    """

    candidates: list[Candidate]
    ranked_by: str
    homonyms: list[tuple[str, ...]]
    typing: list[CandidateTyping] | None = None
    mention_latent_type: int | None = None
    mention_latent_probability: float | None = None
    mention_known_types: list[tuple[str, float]] = field(default_factory=list)  # predicted, best first

    def by_part(self, parts: int) -> list[list[Candidate]]:
        """The candidates of each of the first ``parts`` parts (a query's list, as ``link_queries`` gives it), in order."""
        out: list[list[Candidate]] = [[] for _ in range(parts)]
        for c in self.candidates:
            if c.part < parts:
                out[c.part].append(c)
        return out
