"""A LATTE run's parameters and the linker it re-ranks over.

LATTE (:mod:`linker.methods.latte`) trains a re-ranker over an existing linker: by default the dictionary's
active index version, fixed when the run is queued (``params["base_index"]``), so that a promotion while the
run waits does not change what it trains over. The re-ranker reads the token states of the linker's
transformer, so a sparse-only index cannot be its base.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from linker.recipe import LatteRecipeConfig
from linker.rerank.model import LatteConfig
from linker.rerank.training import RerankTrainingConfig
from webapp.training.errors import RunError
from webapp.training.models import IndexVersion
from webapp.vocab.models import Dictionary

_MODEL, _TRAINING, _RECIPE = LatteConfig(), RerankTrainingConfig(), LatteRecipeConfig()

# The run's params for LATTE: the linker's defaults (CPU sizes; the paper's K=2048 latent types).
LATTE_PARAMS: dict[str, Any] = {
    "epochs": _TRAINING.epochs,
    "lr": _TRAINING.lr,
    "batch_size": _TRAINING.batch_size,
    "known_type_weight": _TRAINING.known_type_weight,  # 0: no known-type loss (the paper's LATTE-NKT)
    "part_weight": _TRAINING.part_weight,  # f's and g's own ranking losses; 0: they learn only through r
    "min_type_count": _TRAINING.min_type_count,
    "latent_types": _MODEL.latent_types,
    "hidden": _MODEL.hidden,
    "lstm_layers": _MODEL.lstm_layers,
    "top_k": _RECIPE.top_k,
    "window_words": _RECIPE.window_words,
    "folds": _RECIPE.folds,
    "max_mentions": 0,  # train on the first N mention parts only (0: all); smoke runs
    "base_index": 0,  # the index version to re-rank over; 0: the dictionary's active one when queued
    "device": "",
    "step_delay_s": 0.0,
}
# Values below these make no model: at least one latent type, two candidates, two folds, one epoch.
_MINIMA = {"latent_types": 1, "top_k": 2, "folds": 2, "epochs": 1, "batch_size": 1, "hidden": 1, "lstm_layers": 1}


def check_latte_params(params: dict[str, Any]) -> None:
    for key, low in _MINIMA.items():
        if params[key] < low:
            raise RunError(f"{key} must be at least {low} for LATTE")


def latte_recipe_config(params: dict[str, Any], device: str) -> LatteRecipeConfig:
    """The linker recipe's LATTE config for a run's (cleaned) params on ``device``."""
    model = LatteConfig(hidden=int(params["hidden"]), lstm_layers=int(params["lstm_layers"]),
                        latent_types=int(params["latent_types"]))
    training = RerankTrainingConfig(
        epochs=int(params["epochs"]), lr=float(params["lr"]), batch_size=int(params["batch_size"]),
        known_type_weight=float(params["known_type_weight"]), min_type_count=int(params["min_type_count"]),
        # .get: a run queued before the parameter existed trains with its default.
        part_weight=float(params.get("part_weight", _TRAINING.part_weight)),
        progress_bar=False,
    )
    return LatteRecipeConfig(model=model, training=training, top_k=int(params["top_k"]),
                             window_words=int(params["window_words"]), folds=int(params["folds"]),
                             device=device or None, max_mentions=int(params["max_mentions"]) or None)


def base_index(dictionary: Dictionary, index_id: int = 0) -> IndexVersion:
    """The index a LATTE run re-ranks over: ``index_id`` or the dictionary's active one; a RunError says why
    there is none to use."""
    indexes = IndexVersion.objects.select_related("encoder", "dictionary_version").filter(dictionary=dictionary)
    if index_id:
        index = indexes.filter(pk=index_id).first()
        if index is None:
            raise RunError(f"index version {index_id} does not belong to dictionary {dictionary.slug!r}")
        if index.state not in (IndexVersion.State.READY, IndexVersion.State.ACTIVE, IndexVersion.State.RETIRED):
            raise RunError(f"index version {index_id} is {index.state}; LATTE re-ranks over a built index")
    else:
        index = indexes.filter(state=IndexVersion.State.ACTIVE).first()
        if index is None:
            raise RunError(f"dictionary {dictionary.slug!r} has no active index: LATTE re-ranks the candidates of "
                           "the active model, so build and activate an index (dense, with an encoder) first")
    if index.encoder_id is None:
        raise RunError(f"index version {index.pk} ({index.label}) is sparse-only: LATTE reads the token states of "
                       "the index's transformer, so build a dense index (with an encoder) first")
    if not index.artifact_path or not (Path(index.artifact_path) / "config.json").exists():
        raise RunError(f"index version {index.pk} has no artifact folder at {index.artifact_path or '(none)'}")
    return index
