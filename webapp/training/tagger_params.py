"""A mention-tagger run's parameters and the linker config they make.

The tagger (:mod:`linker.methods.tagger`) fine-tunes the project's transformer as a BIO token classifier on the
run's spans (:mod:`webapp.training.tagger_inputs`). Its params are the scalar fields of
:class:`linker.methods.tagger.TaggerRecipeConfig` (epochs, lr, batch_size, max_length, stride, warmup,
weight_decay, num_threads, seed, max_documents: 0 or null for all; dictionary_features and gazetteer_folds), read from the dataclass so that a field the linker adds is a
param at once, plus the run's own: ``mention_types`` (the types it learns to find, e.g. ``["Disease"]``; empty:
every type), ``device`` and the tests' ``step_delay_s``. The linker's own checks (its ``__post_init__``) run when
a run is queued, so a bad value is refused with its name then, not a failed run later.
"""

from __future__ import annotations

import dataclasses
import math
from functools import cache
from typing import Any

from webapp.training.errors import RunError

TAGGER = "tagger"
# Recipe fields that are not params: what the worker decides, and nested configs.
_NOT_PARAMS = {"device", "progress_bar"}
_RUN_OPTIONS: dict[str, Any] = {
    "mention_types": [],  # empty: every mention type of the training documents
    "device": "",  # empty: cuda if the worker has one, else cpu
    "step_delay_s": 0.0,  # sleep in every progress report (tests); keep 0
}
WHOLE = ("epochs", "batch_size", "max_length", "stride", "max_documents", "num_threads", "seed", "gazetteer_folds")
MAX_TYPE_CHARS = 64  # Mention.mention_type's length


def _recipe_class() -> type:
    from linker.methods.tagger import TaggerRecipeConfig

    return TaggerRecipeConfig


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


@cache
def recipe_params() -> dict[str, Any]:
    """The tagger recipe's scalar fields with their defaults."""
    config = _recipe_class()()
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)
            if f.name not in _NOT_PARAMS and _scalar(getattr(config, f.name))}


def default_tagger_params() -> dict[str, Any]:
    return recipe_params() | {k: (list(v) if isinstance(v, list) else v) for k, v in _RUN_OPTIONS.items()}


def mention_types(params: dict[str, Any]) -> frozenset[str] | None:
    """The types a run trains on (None: all)."""
    types = [t for t in params.get("mention_types") or [] if t]
    return frozenset(types) if types else None


def check_tagger_params(params: dict[str, Any]) -> None:
    """The ranges the generic type check cannot see, then the linker's own checks of its config."""
    for key in WHOLE:
        value = params.get(key)
        if key not in params or value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value != int(value):
            raise RunError(f"{key} must be a whole number")
        params[key] = int(value)
    if not params.get("max_documents"):
        params["max_documents"] = None  # 0 or empty: every document
    for key, value in params.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise RunError(f"{key} must be a finite number")
    types = params.get("mention_types")
    if not isinstance(types, list) or not all(isinstance(t, str) and 0 < len(t.strip()) <= MAX_TYPE_CHARS for t in types):
        raise RunError(f"mention_types must be a list of mention types (e.g. [\"Disease\"]; each 1 to {MAX_TYPE_CHARS} "
                       "characters); empty: every type")
    params["mention_types"] = sorted({t.strip() for t in types})
    tagger_recipe_config(params, "cpu")


def tagger_recipe_config(params: dict[str, Any], device: str) -> Any:
    """The linker recipe's tagger config for a run's (cleaned) params on ``device``."""
    cls = _recipe_class()
    names = {f.name for f in dataclasses.fields(cls)}
    values = {k: v for k, v in params.items() if k in names and k not in _NOT_PARAMS}
    if "device" in names:
        values["device"] = device or None
    try:
        return cls(**values)
    except (TypeError, ValueError) as exc:
        raise RunError(f"tagger: {exc}") from exc
