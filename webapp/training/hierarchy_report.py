"""What the admin pages show of a base encoder made by hierarchy pre-training: its sources and its held-out
hierarchy scores, read from the report the linker returned (``EncoderModel.config``, metrics keyed
``<source>/<metric>``: :func:`linker.hierarchy.evaluation.hierarchy_scores`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from linker.hierarchy.evaluation import DISTANCE_PAIRS
from linker.hierarchy.graph import DISTANCE_NAMES
from webapp.linking.models import EncoderModel

__all__ = ["DistanceScore", "HierarchyReport", "SourceReport", "hierarchy_report"]


@dataclass(frozen=True)
class DistanceScore:
    """How well cosine tells pairs at two distances apart (ROC AUC; 0.5 is chance)."""

    closer: str
    farther: str
    auc: float | None
    spearman: float | None


@dataclass(frozen=True)
class SourceReport:
    name: str
    concepts: int
    names: int
    edges: int
    hierarchical: bool
    held_out: int
    corpus_names: int
    scores: tuple[DistanceScore, ...] = ()
    spearman: float | None = None
    pairs: tuple[tuple[str, int], ...] = ()  # (distance name, held-out pairs scored)


@dataclass(frozen=True)
class HierarchyReport:
    sources: tuple[SourceReport, ...]
    scope: str
    device: str
    layers: int | None
    distances: str
    epochs: int | None
    batch_size: int | None
    batches_per_epoch: tuple[int, ...]
    holdout_share: float
    train_s: float | None

    @property
    def scored(self) -> bool:
        return any(s.scores for s in self.sources)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _source(row: Mapping[str, Any], metrics: Mapping[str, Any], gained: Mapping[str, Any]) -> SourceReport:
    name = str(row.get("name", ""))

    def metric(key: str) -> float | None:
        return _number(metrics.get(f"{name}/{key}"))

    scores = tuple(
        DistanceScore(DISTANCE_NAMES[i], DISTANCE_NAMES[j], metric(f"auc_{i}_{j}"), metric(f"spearman_{i}_{j}"))
        for i, j in DISTANCE_PAIRS if metric(f"auc_{i}_{j}") is not None
    )
    pairs = tuple((DISTANCE_NAMES[d], int(metric(f"pairs_{d}") or 0)) for d in sorted(DISTANCE_NAMES)
                  if metric(f"pairs_{d}") is not None)
    return SourceReport(
        name=name, concepts=int(row.get("concepts", 0)), names=int(row.get("names", 0)), edges=int(row.get("edges", 0)),
        hierarchical=bool(row.get("hierarchical", True)), held_out=int(row.get("held_out", 0)),
        corpus_names=int(gained.get(name, 0) or 0), scores=scores, spearman=metric("spearman"), pairs=pairs,
    )


def hierarchy_report(encoder: EncoderModel | None, metrics: Mapping[str, Any] | None = None) -> HierarchyReport | None:
    """The report of a HiPrBERT base encoder (``metrics``: the run's, else those kept in its config)."""
    if encoder is None or encoder.method != EncoderModel.Method.HIPRBERT:
        return None
    config = encoder.config or {}
    metrics = metrics if metrics else config.get("metrics") or {}
    gained = config.get("corpus_names_added") or {}
    layers = config.get("encoder_layers")
    return HierarchyReport(
        sources=tuple(_source(row, metrics, gained) for row in config.get("sources") or () if isinstance(row, dict)),
        scope=str(config.get("scope", "")), device=str(config.get("device", "")),
        layers=int(layers) if isinstance(layers, int) else None, distances=str(config.get("distances", "")),
        epochs=config.get("epochs"), batch_size=config.get("batch_size"),
        batches_per_epoch=tuple(int(b) for b in config.get("batches_per_epoch") or ()),
        holdout_share=float(config.get("holdout_share") or 0.0), train_s=_number(config.get("train_s")),
    )
