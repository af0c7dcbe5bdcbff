"""What the admin pages show of a dictionary's active model: its re-ranker, or why it has none, and its
latent types (populated ones first: with K=2048 on a small dictionary most hold no name)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from linker.rerank import LatentTypeSummary, latent_usage
from webapp.artifacts.manifests import is_available
from webapp.linking.models import IndexVersion
from webapp.linking.registry import get_active_linker
from webapp.vocab.models import Dictionary


@dataclass(frozen=True)
class ActiveModel:
    """One dictionary's active index, as the models page lists it (nothing is loaded for it)."""

    dictionary: Dictionary
    index: IndexVersion | None

    @property
    def has_reranker_folder(self) -> bool:
        return bool(self.index and self.index.artifact_path and is_available(self.index.artifact_path, "rerank"))


def active_models() -> list[ActiveModel]:
    active = {
        i.dictionary_id: i
        for i in IndexVersion.objects.filter(state=IndexVersion.State.ACTIVE).select_related("encoder", "first_stage", "dictionary_version", "dictionary")
    }
    return [ActiveModel(d, active.get(d.pk)) for d in Dictionary.objects.order_by("slug")]


@dataclass(frozen=True)
class LatentTypes:
    """The latent types of a dictionary's active model; ``reranker_problem`` says why an artifact's
    re-ranker was refused (the model then ranks by its retriever)."""

    dictionary: Dictionary
    label: str = ""  # the active index's label; empty: no active index
    index_version_id: int | None = None
    ranked_by: str = ""
    reranker_problem: str = ""
    populated: list[LatentTypeSummary] = field(default_factory=list)  # by count, largest first
    empty: list[LatentTypeSummary] = field(default_factory=list)
    known_type_labels: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    reranker_present: bool = False  # a re-ranker serves its types (it may keep the retriever's order)

    @property
    def total(self) -> int:
        return len(self.populated) + len(self.empty)

    @property
    def usage(self) -> dict[str, float]:
        """types used, the largest one's share, the effective number of types (:func:`linker.rerank.latent_usage`)."""
        return latent_usage(self.populated)

    @property
    def has_reranker(self) -> bool:
        return self.reranker_present

    @property
    def types_only(self) -> bool:
        """The re-ranker kept the retriever's order (no trained order beat it on held-out documents): types only."""
        return self.reranker_present and self.ranked_by != "latte"


def latent_types(dictionary: Dictionary) -> LatentTypes:
    active = get_active_linker(dictionary.slug)
    if active is None:
        return LatentTypes(dictionary)
    linker = active.linker
    head = LatentTypes(dictionary, active.label, active.index_version_id, linker.ranked_by,
                       linker.reranker_problem or "")
    reranker = linker.reranker
    if reranker is None:
        return head
    ordered = sorted(reranker.latent_types, key=lambda t: (-t.count, t.index))
    return LatentTypes(
        dictionary, head.label, head.index_version_id, head.ranked_by, head.reranker_problem,
        populated=[t for t in ordered if t.count > 0], empty=[t for t in ordered if t.count == 0],
        known_type_labels=list(reranker.known_type_labels), metadata=dict(reranker.metadata), reranker_present=True,
    )
