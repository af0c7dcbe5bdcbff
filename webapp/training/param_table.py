"""A run's parameters as a person reads them: labels, resolved values, and which ones are defaults.

A run keeps its params as JSON (:mod:`webapp.training.params`), where a scoped parameter left at its default (BioSyn's
epochs at 0, HiPrBERT's batch size at null) means "the scope's default" until the worker knows its device.
:func:`parameter_rows` shows what the run trains (or will train) with: once the worker has recorded its device the
scope is known and those values are the scope's; before, both choices are shown. Labels, the order, and how a value
reads come from the method's parameters dataclass (:class:`linker.methods.params.Param`): nothing here is written
per method.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from linker.methods.params import SCOPES_DEFAULT, Param, ParamField, scope_defaults
from webapp.training.methods import get_training_method
from webapp.training.param_glue import OVER_HIERARCHY_BASE, Names, extra_params
from webapp.training.params import method_fields

__all__ = ["ParamRow", "parameter_rows", "run_scope", "show_value"]

SCOPES = ("full", "student")  # the scopes whose defaults a queued run may still train with


@dataclass(frozen=True)
class ParamRow:
    name: str  # the params key (the API's and the command's name)
    label: str
    value: str
    default: bool  # the method's default (or the scope's)
    note: str = ""  # where a default comes from, what a value means
    main: bool = True


def run_scope(params: dict[str, Any], device: str) -> str | None:
    """The scope a run trains (or trained) at: its ``train_scope``, "auto" resolved by the device its worker
    recorded; None while that is unknown (an "auto" run not started yet)."""
    scope = str(params.get("train_scope", "auto"))
    if scope != "auto":
        return scope
    if not device:
        return None
    from linker.train import resolve_scope  # torch: when a page shows an "auto" run, not when Django loads

    return resolve_scope("auto", device)


def _number(value: float) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if 0 < abs(value) < 1e-3:  # learning rates read as 1e-4, 2e-5 whatever their size (":g" writes 1e-4 as 0.0001)
        mantissa, exponent = f"{value:.6e}".split("e")
        return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"
    text = f"{value:g}"
    return text.replace("e-0", "e-").replace("e+0", "e+")


def show_value(spec: Param, value: Any) -> str:
    """How ``value`` of a parameter declared by ``spec`` reads."""
    if isinstance(value, list):
        return ", ".join(_shown(spec, v) or str(v) for v in value) or spec.unset or "none"
    if _shown(spec, value) is not None:
        return str(_shown(spec, value))
    if spec.unset and not isinstance(value, bool) and value in (None, 0, ""):
        return spec.unset
    if spec.percent and isinstance(value, int | float):
        return f"{value:.0%}"
    if value is None:
        return "—"
    if isinstance(value, int | float):
        return _number(value)
    return str(value)


def _shown(spec: Param, value: Any) -> str | None:
    """The text ``spec`` gives ``value`` (a bool is not taken for 0 or 1)."""
    return next((text for key, text in spec.shown if type(key) is type(value) and key == value), None)


def _scoped(fields: list[ParamField], cls: type, params: dict[str, Any], scope: str | None) -> dict[str, tuple[Any, str]]:
    """The scoped params left at their defaults: name -> (the value it trains with, or None while the scope is
    unknown; the note saying where it comes from)."""
    known = _defaults(cls, scope)
    both = {} if known is not None else {s: _defaults(cls, s) or {} for s in SCOPES}
    out: dict[str, tuple[Any, str]] = {}
    for f in fields:
        if not f.spec.scoped or params.get(f.name, f.default) != f.default:
            continue
        if known is not None:
            out[f.name] = (known.get(f.name), f"the {scope} scope's default")
        else:
            full, student = (show_value(f.spec, both[s].get(f.name)) for s in SCOPES)
            out[f.name] = (None, f"{SCOPES_DEFAULT}: {full} on a GPU (full), {student} on a CPU (student)")
    return out


def _defaults(cls: type, scope: str | None) -> dict[str, Any] | None:
    if scope is None:
        return None
    try:
        return scope_defaults(cls, scope)
    except (KeyError, ValueError):  # a scope the method does not have: both are shown
        return None


def parameter_rows(method: str, params: dict[str, Any], device: str = "", names: Names | None = None,
                   hierarchy_base: bool = False) -> list[ParamRow]:
    """Every parameter of a run of ``method`` as a row: the main ones first (in their declared order), then the
    rest alphabetically. ``device``: what the worker recorded ("" before it started); ``names``: labels of ids
    ({"dictionary": {id: slug}}); ``hierarchy_base``: the run starts from a base encoder made by hierarchy
    pre-training, which some parameters then do not apply to (:data:`OVER_HIERARCHY_BASE` says which)."""
    names = names or {"dictionary": {}}
    fields = method_fields(method)
    declared = {f.name: f for f in fields}
    extras = {e.name: e for e in extra_params(method)}
    cls = get_training_method(method).params_class
    scope = run_scope(params, device) if any(f.spec.scoped for f in fields) else None
    scoped = _scoped(fields, cls, params, scope)
    over = OVER_HIERARCHY_BASE.get(method, {}) if hierarchy_base else {}
    main = [f.name for f in fields if f.spec.main]
    ordered = [k for k in main if k in params] + sorted(k for k in params if k not in main and k != "method")
    rows = []
    for name in ordered:
        value, f = params[name], declared.get(name)
        if f is None:  # a name the method no longer has, kept by an older run
            rows.append(ParamRow(name, name.replace("_", " ").capitalize(), str(value), False, "", False))
            continue
        is_default, is_main = value == f.default, name in main
        if f.spec.hidden and is_default:
            continue
        if name in over:
            rows.append(ParamRow(name, f.spec.label, over[name][0], is_default, over[name][1], is_main))
        elif name in scoped:
            resolved, note = scoped[name]
            shown = SCOPES_DEFAULT if resolved is None else show_value(f.spec, resolved)
            rows.append(ParamRow(name, f.spec.label, shown, True, note, is_main))
        elif name in extras:
            shown = extras[name].show(value, names) if value else f.spec.unset
            rows.append(ParamRow(name, f.spec.label, shown, is_default, "", is_main))
        elif name == "train_scope" and value == "auto" and scope:
            note = f"auto: chosen for a {'CPU' if device == 'cpu' else 'GPU'}"
            rows.append(ParamRow(name, f.spec.label, show_value(f.spec, scope), is_default, note, is_main))
        else:
            rows.append(ParamRow(name, f.spec.label, show_value(f.spec, value), is_default, "", is_main))
    return rows
