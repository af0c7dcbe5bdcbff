"""The parameters of the word-vector methods (fastText, BNE, DAN) and the linker configs they make.

fastText (:mod:`linker.methods.word_vectors`) trains word vectors on the run's texts: the documents of the
chosen collections (title and abstract), the dictionary's definitions (``include_definitions``) and its names
(``include_names``). BNE and DAN (:mod:`linker.methods.bne`, :mod:`linker.methods.dan`) train a name encoder
over word vectors: the run's :attr:`~webapp.training.models.TrainingRun.word_vectors`, or without them fastText
trained on the same texts first (``fasttext_dim``, ``fasttext_epochs``).

BNE's and DAN's params are the scalar fields of their recipe configs (epochs, batch size, learning rate,
patience, BNE's objectives, DAN's level ...), read from the dataclasses so that a field the linker adds is a
param at once; the linker's own checks (its ``__post_init__``) run when a run is queued, so a bad value is a
400 naming it, not a failed run. DAN's ``hierarchy`` is the id of the dictionary whose parent links give the
classes at ``level`` >= 1 (0: the run's own dictionary).
"""

from __future__ import annotations

import dataclasses
import math
from functools import cache
from typing import Any

from linker.encoders.wordvec import FastTextConfig
from linker.methods.word_vectors import FastTextRecipeConfig
from webapp.training.errors import RunError

FASTTEXT, BNE, DAN = "fasttext", "bne", "dan"
ENCODER_METHODS = (BNE, DAN)
_FASTTEXT = FastTextConfig()

FASTTEXT_PARAMS: dict[str, Any] = {
    "dim": _FASTTEXT.dim,
    "epochs": _FASTTEXT.epochs,
    "window": _FASTTEXT.window,
    "min_count": _FASTTEXT.min_count,
    "include_names": True,  # the dictionary's names join the corpus: most words a name encoder meets
    "include_definitions": True,  # the dictionary's concept definitions join the corpus
}
# A word-vector encoder's params besides its recipe's own: fastText's when it trains its own vectors (dropped
# when the run starts from word vectors), the device, and the tests' delay.
OWN_VECTOR_PARAMS = ("fasttext_dim", "fasttext_epochs", "include_definitions")
_OWN_VECTORS: dict[str, Any] = {
    "fasttext_dim": _FASTTEXT.dim,
    "fasttext_epochs": _FASTTEXT.epochs,
    "include_definitions": True,
    "device": "",
    "step_delay_s": 0.0,
}
# Recipe fields that are not params: nested configs, and what the worker decides.
_NOT_PARAMS = {"fasttext", "device", "progress_bar", "bne", "dan", "encoder", "model", "training"}
MAX_DIM = 1000
MAX_EPOCHS = 1000


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str)) or (
        isinstance(value, (tuple, list)) and all(isinstance(v, (str, int, float)) for v in value))


def _recipe_class(method: str) -> type:
    if method == BNE:
        from linker.methods.bne import BNERecipeConfig

        return BNERecipeConfig
    from linker.methods.dan import DANRecipeConfig

    return DANRecipeConfig


@cache
def recipe_params(method: str) -> dict[str, Any]:
    """BNE's or DAN's recipe fields with plain defaults (tuples as lists, the JSON a run keeps)."""
    config = _recipe_class(method)()
    out: dict[str, Any] = {}
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if f.name in _NOT_PARAMS or not _scalar(value):
            continue
        out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


def default_word_vector_params(method: str) -> dict[str, Any]:
    if method == FASTTEXT:
        return dict(FASTTEXT_PARAMS)
    own = {"hierarchy": 0} if method == DAN else {}  # a dictionary id here; its slug in the recipe
    return recipe_params(method) | own | _OWN_VECTORS


def check_word_vector_params(method: str, params: dict[str, Any]) -> None:
    """The ranges the generic type check cannot see, then the linker's own checks of its config."""
    if method == FASTTEXT:
        _whole(params, "dim", 1, MAX_DIM)
        _whole(params, "epochs", 1, MAX_EPOCHS)
        _whole(params, "window", 1, 100)
        _whole(params, "min_count", 1, 1000)
        fasttext_config(params)
        return
    _whole(params, "fasttext_dim", 1, MAX_DIM)
    _whole(params, "fasttext_epochs", 1, MAX_EPOCHS)
    for key in ("epochs", "max_epochs", "patience", "batch_size"):
        if key in params:
            _whole(params, key, 1, 10_000_000)
    for key, value in params.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise RunError(f"{key} must be a finite number")
    if "max_minutes" in params:  # BNE: None is no budget; DAN: 0 is. Either way 0 or empty means none here.
        minutes = params["max_minutes"]
        if minutes is not None and (isinstance(minutes, bool) or not isinstance(minutes, (int, float)) or minutes < 0):
            raise RunError("max_minutes must be a number of minutes, not negative (0 or null: no time budget)")
        if method == BNE:
            params["max_minutes"] = float(minutes) if minutes else None
        else:
            params["max_minutes"] = float(minutes or 0.0)
    if "objectives" in params and not all(isinstance(o, str) for o in params["objectives"]):
        raise RunError("objectives must be a list of names")
    if params.get("top") is not None and not isinstance(params["top"], str):
        raise RunError("top must be a concept id (or null: the hierarchy's own top)")
    if params.get("level") is not None and not (isinstance(params["level"], int) and 0 <= params["level"] <= 20):
        raise RunError("level must be a whole number from 0 (concepts) to 20")
    if "hierarchy" in params and not (isinstance(params["hierarchy"], int) and 0 <= params["hierarchy"] < 2**31):
        raise RunError("hierarchy must be a dictionary id (0: the run's own dictionary)")
    word_vector_recipe_config(method, params, "cpu")


def _whole(params: dict[str, Any], key: str, low: int, high: int) -> None:
    value = params[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value != int(value):
        raise RunError(f"{key} must be a whole number")
    if not low <= value <= high:
        raise RunError(f"{key} must be between {low} and {high}")
    params[key] = int(value)


def fasttext_config(params: dict[str, Any], dim_key: str = "dim", epochs_key: str = "epochs") -> FastTextConfig:
    changes: dict[str, Any] = {"dim": int(params[dim_key]), "epochs": int(params[epochs_key])}
    if dim_key == "dim":
        changes |= {"window": int(params["window"]), "min_count": int(params["min_count"])}
    try:
        return dataclasses.replace(_FASTTEXT, **changes)
    except ValueError as exc:
        raise RunError(str(exc)) from exc


def fasttext_recipe_config(params: dict[str, Any]) -> FastTextRecipeConfig:
    return FastTextRecipeConfig(fasttext=fasttext_config(params), include_names=bool(params["include_names"]))


def word_vector_recipe_config(method: str, params: dict[str, Any], device: str, hierarchy: str | None = None) -> Any:
    """BNE's or DAN's recipe config for a run's (cleaned) params on ``device``; ``hierarchy`` is the name of
    DAN's hierarchy source (the dictionary's slug, as :mod:`webapp.training.word_vector_inputs` names it)."""
    cls = _recipe_class(method)
    names = {f.name for f in dataclasses.fields(cls)}
    values = {k: (tuple(v) if isinstance(v, list) else v) for k, v in params.items()
              if k in names and k not in _NOT_PARAMS and k != "hierarchy"}
    if "fasttext" in names and "fasttext_dim" in params:
        values["fasttext"] = fasttext_config(params, "fasttext_dim", "fasttext_epochs")
    if "device" in names:
        values["device"] = device or None
    if "hierarchy" in names and hierarchy is not None:
        values["hierarchy"] = hierarchy
    try:
        return cls(**values)
    except (TypeError, ValueError) as exc:
        raise RunError(f"{method}: {exc}") from exc
