"""A hierarchy pre-training (HiPrBERT) run's parameters and the linker config they make.

HiPrBERT (:mod:`linker.methods.hiprbert`) trains the base transformer on the synonyms and parent links of one
or more dictionaries: its output is a base encoder (a Hugging Face folder) that BioSyn runs and index builds
start from, not a linker. ``params["dictionaries"]`` holds the ids of every dictionary it trains on (the
run's ``dictionary`` first); the run's collections, if any, lend their gold mentions as extra names.

``batch_size``, ``max_batches`` and ``lr`` are ``None`` unless the admin set them, meaning "the scope's default"
(:func:`scope_defaults`): the worker's recipe resolves them once it knows its device.
"""

from __future__ import annotations

import math
from typing import Any

from linker.hierarchy.training import DISTANCE_MODES, HierarchyPretrainConfig
from linker.methods.hiprbert import HiPrBERTRecipeConfig
from webapp.training.errors import RunError

_PRETRAIN = HierarchyPretrainConfig()
HIPRBERT_SCOPES = ("auto", "full", "student")

HIPRBERT_PARAMS: dict[str, Any] = {
    "dictionaries": [],  # ids of the dictionaries trained on, the run's own first (filled in when queued)
    "train_scope": "auto",  # auto: "full" (the paper) on a GPU, "student" (3-layer student) on a CPU
    "epochs": _PRETRAIN.epochs,
    "max_batches": None,  # per epoch; None: the scope's default; 0: every anchor once
    "batch_size": None,  # names per batch; None: the scope's default
    "lr": None,  # None: the scope's default (the paper's 2e-5 for full, 1e-4 for the student's 1,000 steps)
    "distances": _PRETRAIN.distances,  # hierarchy (the paper) | synonym (the same batches, synonymy only)
    "holdout_share": 0.0,  # concepts held out of training and scored on (0: none, no metrics)
    "device": "",
    "step_delay_s": 0.0,
}
SCOPE_DEPENDENT = ("max_batches", "batch_size", "lr")
MAX_HOLDOUT = 0.5  # more than half the concepts held out leaves too little hierarchy to learn from


def scope_defaults(scope: str) -> dict[str, float]:
    """``batch_size``, ``max_batches`` and ``lr`` of a scope (``full`` or ``student``), as the linker resolves them."""
    resolved = HiPrBERTRecipeConfig(scope=scope, device="cpu").resolve()
    return {"batch_size": resolved.pretrain.batch_size, "max_batches": resolved.pretrain.max_batches,
            "lr": resolved.pretrain.lr}


def check_hiprbert_params(params: dict[str, Any]) -> None:
    """What the generic type check cannot see: the scope-dependent ``None``s, the choices and the ranges."""
    for key in ("max_batches", "batch_size"):
        value = params[key]
        if value is None:
            continue
        if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
                or value != int(value) or value < 0):
            raise RunError(f"{key} must be a whole number, not negative (or null: the scope's default)")
        params[key] = int(value)
    lr = params["lr"]
    if lr is not None:
        if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not math.isfinite(lr) or not 0 < lr < 1:
            raise RunError("lr must be a number between 0 and 1 (or null: the scope's default)")
        params["lr"] = float(lr)
    if params["batch_size"] is not None and params["batch_size"] < 2:
        raise RunError("batch_size must be at least 2: a batch of one name has no pairs")
    if params["epochs"] < 1:
        raise RunError("epochs must be at least 1 for hierarchy pre-training")
    if params["train_scope"] not in HIPRBERT_SCOPES:
        raise RunError(f"train_scope must be one of {', '.join(HIPRBERT_SCOPES)} for hierarchy pre-training")
    if params["distances"] not in DISTANCE_MODES:
        raise RunError(f"distances must be one of {', '.join(DISTANCE_MODES)}")
    if not 0.0 <= params["holdout_share"] <= MAX_HOLDOUT:
        raise RunError(f"holdout_share must be between 0 and {MAX_HOLDOUT}")
    ids = params["dictionaries"]
    if not all(isinstance(i, int) and not isinstance(i, bool) and 0 < i < 2**31 for i in ids):
        raise RunError("dictionaries must be a list of dictionary ids")


def hiprbert_recipe_config(params: dict[str, Any], device: str) -> HiPrBERTRecipeConfig:
    """The linker recipe's HiPrBERT config for a run's (cleaned) params on ``device``; the ``None``s stay the
    scope's defaults."""
    return HiPrBERTRecipeConfig(
        pretrain=HierarchyPretrainConfig(progress_bar=False), scope=str(params["train_scope"]),
        epochs=int(params["epochs"]), batch_size=params["batch_size"], max_batches=params["max_batches"],
        lr=params["lr"], distances=str(params["distances"]), holdout_share=float(params["holdout_share"]),
        device=device or None,
    )
