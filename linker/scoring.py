"""The scoring weights an index is built with, carried from a trained linker artifact.

A linker artifact's retriever scores ``S = dense + λ·sparse`` (dense scaled by ``dense_scale``) and breaks ties by a
concept prior weighted by ``prior_weight`` (:class:`~linker.retrieval.RetrievalConfig`); training learns λ (BioSyn)
and sets the prior from its annotations. An index built later with that artifact as its encoder (``build-index
--encoder``, the web app's index builds) keeps them, or its top-1 differs from the trained linker's for reasons that
have nothing to do with what it was built for (a first stage, a new dictionary release).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from linker.retrieval import RetrievalConfig

__all__ = ["SCORING_FIELDS", "Scoring", "scoring_for", "trained_scoring"]

SCORING_FIELDS = ("sparse_weight", "dense_scale", "prior_weight")


@dataclass(frozen=True)
class Scoring:
    """The retriever's scoring weights, each with where it came from (``flag``, ``artifact`` or ``default``), and the
    trained concept prior carried with them (concept id -> log(1 + n))."""

    retrieval: RetrievalConfig
    sources: dict[str, str]
    concept_prior: dict[str, float]
    artifact: str = ""  # the linker artifact the trained weights came from, if any

    def summary(self) -> dict[str, Any]:
        return {
            **{name: getattr(self.retrieval, name) for name in SCORING_FIELDS},
            "from": dict(self.sources),
            "concept_prior": len(self.concept_prior),
            "artifact": self.artifact or None,
        }

    def describe(self) -> str:
        """``λ 1.253 (artifact), dense scale 20 (artifact), prior weight 0.001 (artifact); concept prior of 1,234
        concepts``: for a build's log."""
        labels = {"sparse_weight": "λ", "dense_scale": "dense scale", "prior_weight": "prior weight"}
        said = ", ".join(
            f"{labels[n]} {getattr(self.retrieval, n):g} ({self.sources[n]})" for n in SCORING_FIELDS
        )
        return said + (
            f"; concept prior of {len(self.concept_prior):,} concepts" if self.concept_prior else ""
        )


def scoring_for(
    encoder_path: str | Path | None,
    sparse_weight: float | None = None,
    dense_scale: float | None = None,
    prior_weight: float | None = None,
) -> Scoring:
    """The scoring weights for an index built with ``encoder_path``: each weight given (not None) wins; else a linker
    artifact's trained value; else :class:`RetrievalConfig`'s default. A given weight overrides only itself."""
    given = {"sparse_weight": sparse_weight, "dense_scale": dense_scale, "prior_weight": prior_weight}
    trained, prior, artifact = trained_scoring(encoder_path)
    values: dict[str, float] = {}
    sources: dict[str, str] = {}
    for name in SCORING_FIELDS:
        value = given[name]
        if value is not None:
            values[name], sources[name] = float(value), "flag"
        elif trained is not None:
            values[name], sources[name] = float(getattr(trained, name)), "artifact"
        else:
            values[name], sources[name] = float(getattr(RetrievalConfig(), name)), "default"
    retrieval = replace(
        RetrievalConfig(),
        sparse_weight=values["sparse_weight"],
        dense_scale=values["dense_scale"],
        prior_weight=values["prior_weight"],
    )
    return Scoring(retrieval, sources, prior, artifact)


def trained_scoring(encoder_path: str | Path | None) -> tuple[RetrievalConfig | None, dict[str, float], str]:
    """A linker artifact's retrieval config, concept prior and folder; (None, {}, "") for a bare encoder folder (a
    Hugging Face model, a BNE/DAN encoder folder) or none: they carry no trained scoring."""
    if encoder_path is None:
        return None, {}, ""
    folder = Path(encoder_path)
    config_file = folder / "config.json"
    if not ((folder / "encoder").is_dir() and config_file.is_file()):
        return None, {}, ""
    payload = json.loads(config_file.read_text())
    if not isinstance(payload, dict) or "format" not in payload:  # not a linker artifact's config.json
        return None, {}, ""
    retrieval = RetrievalConfig(**(payload.get("config") or {}).get("retrieval", {}))
    prior_file = folder / "prior.json"
    prior = json.loads(prior_file.read_text()) if prior_file.is_file() else {}
    return retrieval, {str(k): float(v) for k, v in prior.items()}, str(folder)
