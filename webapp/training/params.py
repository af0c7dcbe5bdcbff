"""A training run's parameters: the defaults, checking what an admin asked for, and the linker config.

``params`` (a JSON object on the run) holds ``method`` (the recipe's method: ``biosyn``, the default,
``latte``, ``hiprbert``, ``fasttext``, ``bne``, ``dan`` or ``tagger``) and that method's parameters. For BioSyn: the
hyperparameters of :class:`linker.train.BioSynConfig` and the run options of :data:`RUN_OPTIONS`; for LATTE:
:data:`webapp.training.latte.LATTE_PARAMS`; for HiPrBERT: :data:`webapp.training.hiprbert.HIPRBERT_PARAMS`;
for the word-vector methods: :mod:`webapp.training.word_vector_params`; for the mention tagger:
:mod:`webapp.training.tagger_params`.
BioSyn's scope-dependent ones (:data:`SCOPE_DEPENDENT`) are 0 unless the admin set them, meaning "the scope's
default": the worker's recipe resolves them once it knows its device (HiPrBERT's say so with ``None``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from django.conf import settings

from linker.recipe import BioSynRecipeConfig
from linker.train import SCOPE_DEFAULTS, SCOPES, BioSynConfig
from webapp.training.errors import RunError
from webapp.training.hiprbert import HIPRBERT_PARAMS, check_hiprbert_params, hiprbert_recipe_config
from webapp.training.latte import LATTE_PARAMS, check_latte_params, latte_recipe_config
from webapp.training.tagger_params import (
    TAGGER,
    check_tagger_params,
    default_tagger_params,
    tagger_recipe_config,
)
from webapp.training.word_vector_params import (
    BNE,
    DAN,
    FASTTEXT,
    check_word_vector_params,
    default_word_vector_params,
    fasttext_recipe_config,
    word_vector_recipe_config,
)

# Run-level options kept in ``params`` next to the BioSyn hyperparameters.
RUN_OPTIONS: dict[str, Any] = {
    "train_scope": "auto",  # auto: "full" (the paper) on a GPU, "student" (3-layer student) on a CPU
    "skip_pretrain": False,  # SapBERT-style synonym pre-training over the dictionary first
    "pretrain_epochs": 0,  # 0: the scope's default (linker.train.SCOPE_DEFAULTS)
    "pretrain_max_pairs": 0,  # 0: the scope's default
    "max_queries": 0,  # train on the first N queries only (0: all); smoke runs
    "prior_weight": 1e-3,
    "device": "",  # empty: cuda if the worker has one, else cpu
    "step_delay_s": 0.0,  # sleep in every progress report: lets tests kill a worker mid-run; keep 0
}
_NOT_PARAMS = {"feature_cache", "progress_bar", "train_scope"}

# Zero means "the scope's default" (linker.train.SCOPE_DEFAULTS): the paper's 10 epochs at 1e-5 for a GPU's
# full fine-tuning, one epoch at 2e-5 for the CPU student.
SCOPE_DEPENDENT = ("epochs", "lr", "pretrain_epochs", "pretrain_max_pairs")


BIOSYN, LATTE, HIPRBERT = "biosyn", "latte", "hiprbert"
METHODS = (BIOSYN, LATTE, HIPRBERT, FASTTEXT, BNE, DAN, TAGGER)
WORD_VECTOR_METHODS = (FASTTEXT, BNE, DAN)


def default_params(method: str = BIOSYN) -> dict[str, Any]:
    """A method's defaults. BioSyn: the paper's hyperparameters (:class:`linker.train.BioSynConfig`) and the
    run options, the scope-dependent ones (:data:`SCOPE_DEPENDENT`) 0, i.e. the scope's default."""
    if method == LATTE:
        return {"method": LATTE} | LATTE_PARAMS
    if method == HIPRBERT:
        return {"method": HIPRBERT} | HIPRBERT_PARAMS | {"dictionaries": []}
    if method in WORD_VECTOR_METHODS:
        return {"method": method} | default_word_vector_params(method)
    if method == TAGGER:
        return {"method": TAGGER} | default_tagger_params()
    biosyn = {k: v for k, v in dataclasses.asdict(BioSynConfig()).items() if k not in _NOT_PARAMS}
    return {"method": BIOSYN} | biosyn | RUN_OPTIONS | {"epochs": 0, "lr": 0.0}


def params_method(params: dict[str, Any] | None, method: str | None = None) -> str:
    """The method a run's params ask for: their ``method`` or ``method``, biosyn when neither says; the two
    must agree when both do."""
    asked = (params or {}).get("method")
    if asked is not None and not isinstance(asked, str):
        raise RunError("method must be a string")
    if asked and method and asked != method:
        raise RunError(f"params say method {asked!r} and the request {method!r}")
    chosen = asked or method or BIOSYN
    if chosen not in METHODS:
        raise RunError(f"unknown training method {chosen!r}; known: {', '.join(METHODS)}")
    return chosen


def resolved_params(params: dict[str, Any], scope: str) -> dict[str, Any]:
    """``params`` with the scope-dependent zeros replaced by the scope's defaults (what a run on ``scope``
    trains with)."""
    scoped = dataclasses.asdict(SCOPE_DEFAULTS[scope])  # its field names are the params' names
    return params | {k: scoped[k] for k in SCOPE_DEPENDENT if not params.get(k)}


def clean_params(params: dict[str, Any] | None, method: str | None = None) -> dict[str, Any]:
    """The method's defaults overlaid with ``params``; unknown names and values of the wrong type are refused."""
    chosen = params_method(params, method)
    out = default_params(chosen)
    for key, value in (params or {}).items():
        if key == "method":
            continue
        if key not in out:
            raise RunError(f"unknown training parameter {key!r} for {chosen}")
        out[key] = _checked(key, value, out[key])
    if chosen == LATTE:
        check_latte_params(out)
    elif chosen == HIPRBERT:
        check_hiprbert_params(out)
    elif chosen in WORD_VECTOR_METHODS:
        check_word_vector_params(chosen, out)
    elif chosen == TAGGER:
        check_tagger_params(out)
    elif out["train_scope"] != "auto" and out["train_scope"] not in SCOPES:
        raise RunError(f"train_scope must be auto or one of {', '.join(SCOPES)}")
    return out


def _checked(key: str, value: Any, default: Any) -> Any:
    """``value`` as the type of ``default``, or a RunError saying what is wrong with it (a ``None`` default,
    "the scope's default", is checked by its method)."""
    if default is None:
        return value
    if isinstance(default, list):
        if not isinstance(value, list):
            raise RunError(f"{key} must be a list")
    elif isinstance(default, bool):
        if not isinstance(value, bool):
            raise RunError(f"{key} must be true or false")
    elif isinstance(default, (int, float)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise RunError(f"{key} must be a number")
        if isinstance(default, int) and isinstance(value, float) and not value.is_integer():
            raise RunError(f"{key} must be a whole number")
        value = type(default)(value)
        if value < 0:
            raise RunError(f"{key} must not be negative")
    elif isinstance(default, str) and not isinstance(value, str):
        raise RunError(f"{key} must be a string")
    return value


def recipe_config(params: dict[str, Any], device: str, hierarchy: str | None = None) -> Any:
    """The linker recipe's config for a run's (cleaned) params on ``device``, of the params' method; BioSyn's
    zeros stay the scope's defaults. ``hierarchy``: the name of DAN's hierarchy source."""
    if params.get("method") == LATTE:
        return latte_recipe_config(params, device)
    if params.get("method") == HIPRBERT:
        return hiprbert_recipe_config(params, device)
    if params.get("method") == FASTTEXT:
        return fasttext_recipe_config(params)
    if params.get("method") in (BNE, DAN):
        return word_vector_recipe_config(str(params["method"]), params, device, hierarchy)
    if params.get("method") == TAGGER:
        return tagger_recipe_config(params, device)
    fields = {f.name for f in dataclasses.fields(BioSynConfig)}
    biosyn = BioSynConfig(**{k: v for k, v in params.items() if k in fields and k not in _NOT_PARAMS},
                          progress_bar=False)

    def scoped(name: str) -> Any:
        return params.get(name) or None  # 0: the scope's default

    return BioSynRecipeConfig(
        biosyn=biosyn, scope=str(params.get("train_scope", "auto")), epochs=scoped("epochs"), lr=scoped("lr"),
        pretrain_epochs=scoped("pretrain_epochs"), pretrain_max_pairs=scoped("pretrain_max_pairs"),
        skip_pretrain=bool(params.get("skip_pretrain")), max_queries=int(params.get("max_queries", 0)),
        prior_weight=float(params.get("prior_weight", 1e-3)), device=device or None,
        feature_cache=str(Path(settings.ARTIFACT_ROOT) / "cache" / "features"),
    )
