"""A training run's parameters: the defaults, checking what an admin asked for, and the linker config they make.

``params`` (a JSON object on the run) holds ``method`` (a method of :mod:`linker.recipe`'s table; ``biosyn`` when
none is named) and that method's parameters: the fields of its parameters dataclass
(:mod:`linker.methods.params`: defaults, bounds, choices and help text in one declaration), plus the ids of
database rows a few methods keep (:mod:`webapp.training.param_glue`). Nothing here is written per method.

A scoped parameter left at its default (BioSyn's epochs at 0, HiPrBERT's batch size at null) means "the scope's
default": the worker's recipe resolves it once it knows its device (:func:`resolved_params` shows what it will be).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings

from linker.methods.base import RunContext
from linker.methods.params import ParamError, ParamField, as_json, check_params, params_of, scope_defaults
from webapp.training.errors import RunError
from webapp.training.methods import DEFAULT_METHOD, get_training_method
from webapp.training.param_glue import extra_params

__all__ = ["ParamRefused", "BIOSYN", "default_params", "params_method", "clean_params", "resolved_params",
           "recipe_config", "method_fields"]

BIOSYN = DEFAULT_METHOD


class ParamRefused(RunError):
    """A parameter's value is refused; ``param`` names it (a form shows the message by its field)."""

    def __init__(self, param: str, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.param, self.reason = param, reason


def method_fields(method: str) -> list[ParamField]:
    """Every parameter a run of ``method`` keeps, in the order a person reads them: the method's, and the web app's
    own ids placed where they read best."""
    fields = list(params_of(get_training_method(method).params_class))
    for extra in extra_params(method):
        names = [f.name for f in fields]
        at = names.index(extra.after) + 1 if extra.after in names else 0
        fields.insert(at, extra.field)
    return fields


def default_params(method: str = BIOSYN) -> dict[str, Any]:
    """A method's defaults, with ``method``."""
    return {"method": method} | {f.name: _copy(f.default) for f in method_fields(method)}


def _copy(value: Any) -> Any:
    return list(value) if isinstance(value, list) else value


def params_method(params: dict[str, Any] | None, method: str | None = None) -> str:
    """The method a run's params ask for: their ``method`` or ``method``, biosyn when neither says; the two
    must agree when both do."""
    asked = (params or {}).get("method")
    if asked is not None and not isinstance(asked, str):
        raise RunError("method must be a string")
    if asked and method and asked != method:
        raise RunError(f"params say method {asked!r} and the request {method!r}")
    chosen = asked or method or BIOSYN
    get_training_method(chosen)
    return chosen


def clean_params(params: dict[str, Any] | None, method: str | None = None) -> dict[str, Any]:
    """The method's defaults overlaid with ``params``: an unknown name, a value of the wrong type or out of its
    bounds, or one the method's own config refuses is a RunError naming it (a :class:`ParamRefused` when it names
    one parameter)."""
    chosen = params_method(params, method)
    entry = get_training_method(chosen)
    given = {k: v for k, v in (params or {}).items() if k != "method"}
    extras = {extra.name: extra for extra in extra_params(chosen)}
    try:
        values = check_params(entry.params_class, {k: v for k, v in given.items() if k not in extras}, chosen)
        out = {"method": chosen} | as_json(values)
        for name, extra in extras.items():
            out[name] = extra.check(given[name]) if name in given else _copy(extra.default)
        entry.configure(values, RunContext(device="cpu"))  # the method's own checks of its config
    except ParamError as exc:
        raise ParamRefused(exc.name, str(exc), exc.reason) from exc
    except (TypeError, ValueError) as exc:
        raise RunError(f"{chosen}: {exc}") from exc
    return out


def resolved_params(params: dict[str, Any], scope: str) -> dict[str, Any]:
    """``params`` with the scoped parameters left at their defaults replaced by ``scope``'s values (what a run on
    ``scope`` trains with)."""
    method = str(params.get("method") or BIOSYN)
    scoped = scope_defaults(get_training_method(method).params_class, scope)
    fields = {f.name: f for f in method_fields(method)}
    return params | {k: v for k, v in scoped.items() if params.get(k, fields[k].default) == fields[k].default}


def recipe_config(params: dict[str, Any], device: str, hierarchy: str | None = None) -> Any:
    """The linker recipe's config for a run's (cleaned) params on ``device``; a scoped parameter left at its default
    stays the scope's. ``hierarchy``: the name of the hierarchy source a method reads (DAN's). A name the method no
    longer has (a run queued before it changed) is left out."""
    entry = get_training_method(str(params.get("method") or BIOSYN))
    names = {f.name for f in params_of(entry.params_class)}
    values = check_params(entry.params_class, {k: v for k, v in params.items() if k in names}, entry.name)
    cache = str(Path(settings.ARTIFACT_ROOT) / "cache" / "features")
    return entry.configure(values, RunContext(device=device or None, cache=cache, hierarchy=hierarchy))
