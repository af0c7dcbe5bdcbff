"""What the re-ranker says about a mention and its candidates, worded for the candidate panel.

Pure: reads a :class:`linker.rerank.results.LinkedMention` and the linker that made it (its latent types'
typical names, its known-type threshold), no database. Without a re-ranker every candidate gets an empty
:class:`CandidateTypes` (nothing to show) and only homonyms, which the name table knows, remain.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from linker.rerank.results import RANKED_BY_LATTE, CandidateTyping, LatentTypeSummary, LinkedMention

if TYPE_CHECKING:  # heavy (torch, faiss): imported where the work runs, not when Django loads (issue #45)
    from linker.linker import Linker

RANKED_BY_LABELS = {RANKED_BY_LATTE: "LATTE re-ranker"}
HOMONYM_NOTE = "a name shared by several concepts — the choice is a convention, not a spelling"


@dataclass(frozen=True)
class LatentType:
    label: str  # its first three typical names
    probability: float
    typical_names: tuple[str, ...]

    @property
    def title(self) -> str:
        return f"Latent type {self.probability:.0%}: {', '.join(self.typical_names) or self.label}"


@dataclass(frozen=True)
class CandidateTypes:
    latent: LatentType | None = None
    conflict: str = ""  # why the concept's known types conflict with the mention's ("" when they do not)
    homonyms: tuple[str, ...] = ()  # other concept ids that own the matched name


@dataclass(frozen=True)
class MentionTypes:
    """The mention's side: its predicted known types (best first) and its latent type, and who ranked."""

    ranked_by: str  # "LATTE re-ranker" or "retriever"
    known: list[tuple[str, float]] = field(default_factory=list)
    latent: LatentType | None = None
    reranker_problem: str = ""  # why the artifact's re-ranker was refused: the retriever ranked instead
    # "LATTE re-ranker" where it types the candidates but kept the retriever's order ("" where it ranks, or is absent)
    typed_by: str = ""


def ranked_by_label(ranked_by: str) -> str:
    return RANKED_BY_LABELS.get(ranked_by, "retriever")


def latent_summary(linker: Linker, index: int | None) -> LatentTypeSummary | None:
    """The linker's re-ranker's latent type ``index`` (None: no re-ranker, or no type: -1 below the re-ranked top)."""
    if linker.reranker is None or index is None or index < 0:
        return None
    return linker.reranker.latent_type(index)


def _latent(linker: Linker, index: int | None, probability: float | None) -> LatentType | None:
    summary = latent_summary(linker, index)
    if summary is None or probability is None:
        return None
    return LatentType(summary.label, float(probability), summary.typical_names)


def _conflict(typing: CandidateTyping, predicted: Sequence[tuple[str, float]], threshold: float) -> str:
    if not typing.type_conflict:
        return ""
    confident = [f"{label} ({p:.0%})" for label, p in predicted if p >= threshold] or [label for label, _ in predicted[:1]]
    return f"Type conflict: the mention is predicted as {', '.join(confident)} while this concept is {', '.join(typing.known_types)}."


def mention_types(linker: Linker, linked: LinkedMention) -> MentionTypes:
    return MentionTypes(
        ranked_by_label(linked.ranked_by),
        list(linked.mention_known_types),
        _latent(linker, linked.mention_latent_type, linked.mention_latent_probability),
        linker.reranker_problem or "",
        RANKED_BY_LABELS[RANKED_BY_LATTE] if linked.typing is not None and linked.ranked_by != RANKED_BY_LATTE else "",
    )


def candidate_types(linker: Linker, linked: LinkedMention) -> list[CandidateTypes]:
    """One entry per candidate of ``linked``, in its order."""
    if linked.typing is None or linker.reranker is None:
        return [CandidateTypes(homonyms=tuple(h)) for h in linked.homonyms]
    threshold = linker.reranker.settings.known_type_threshold
    return [
        CandidateTypes(
            _latent(linker, t.latent_type, t.latent_probability),
            _conflict(t, linked.mention_known_types, threshold),
            tuple(h),
        )
        for t, h in zip(linked.typing, linked.homonyms, strict=True)
    ]
