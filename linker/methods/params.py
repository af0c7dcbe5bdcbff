"""A training method's parameters as one dataclass: defaults, bounds, choices and help text on its fields.

A method declares what a person may set as a dataclass whose fields are made by :func:`param`::

    @dataclass
    class TinyParams:
        epochs: int = param(3, "Epochs", "Passes over the training pairs.", low=1, high=100, main=True, form=True)

Whatever shows or checks parameters reads that one declaration: :func:`check_params` turns a JSON object into
the dataclass, refusing a wrong name, type or range with a :class:`ParamError` that names the parameter;
:func:`as_json` turns it back; a form, a table or a command line reads :func:`params_of`. Values are JSON's:
bool, int, float, str, None (for an ``X | None`` field) and lists of strings (a tuple default is kept as a list).

Two conventions. An optional field (``int | None = None``) given 0 or "" is stored as None, "unset", unless it is
``scoped``. A ``scoped`` field left at its default means "the training scope's default": the dataclass then has
a ``train_scope`` field and a ``scope_defaults(scope)`` class method giving those values per scope.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

__all__ = ["Param", "ParamError", "ParamField", "param", "params_of", "check_params", "as_json", "default_json",
           "scope_defaults", "format_number", "check_value", "device_param", "delay_param", "AUTO_DEVICE"]

_KEY = "linker.param"  # the key of a field's metadata that holds its Param
SCOPES_DEFAULT = "the scope's default"


@dataclass(frozen=True)
class Param:
    """How a person reads and sets one parameter. Only ``label`` is needed; the rest say more."""

    label: str
    help: str = ""
    low: float | None = 0  # numbers: the least value (0: not negative); None: any
    high: float | None = None
    above: bool = False  # ``low`` itself is refused ("must be above 0")
    below: bool = False  # ``high`` itself is refused
    choices: tuple[tuple[str, str], ...] = ()  # (value, what it means) for a string or each item of a list
    open: bool = False  # the choices are suggestions: any other string is taken too
    unset: str = ""  # what an empty value (None, 0, "" or []) means, read as the value: "all", "none"
    scoped: bool = False  # its default means "the training scope's default" (see the module docstring)
    placeholder: str = ""  # a form's empty field: what it trains with; {full} and {student}: the scopes' values
    main: bool = False  # among the first a person reads (a run's table, a form), in declaration order
    form: bool | str = False  # on a start form (a string: the field's name, where it differs from the param's)
    group: str = ""  # the form's group of fields, where not the method's own
    shown: tuple[tuple[Any, str], ...] = ()  # how some values read in a table: (value, text)
    percent: bool = False  # a share, read as a percentage
    hidden: bool = False  # left out of a table unless set to a value other than its default (a test's hook)
    refusal: str = ""  # the whole message for a value out of its bounds or choices, where the generated one misleads
    noun: str = ""  # what a value is, where its type does not say it ("concept id"): "must be a concept id"
    empty: str = ""  # what a form says of a field left empty that has no default to fall back to
    ask: str = ""  # how a form asks for it where the label would not do (a box to tick: "Skip ...")


@dataclass(frozen=True)
class ParamField:
    """One field of a method's parameters: its name, the type of its values, its default and its Param."""

    name: str
    kind: str  # bool | int | float | str | list
    optional: bool  # None is a value ("unset", or for a scoped field the scope's default)
    default: Any  # as JSON (a tuple as a list)
    spec: Param
    as_tuple: bool = False  # a list the dataclass keeps as a tuple

    @property
    def field_name(self) -> str:
        """The name of its field on a start form."""
        return self.spec.form if isinstance(self.spec.form, str) else self.name


class ParamError(ValueError):
    """A refused value, with the parameter it is for. ``reason`` reads after the parameter's name or label."""

    def __init__(self, name: str, reason: str, message: str = "") -> None:
        self.name, self.reason = name, reason
        super().__init__(message or f"{name} {reason}")


def param(default: Any, label: str, help: str = "", **spec: Any) -> Any:
    """A dataclass field with ``default`` (a list, dict or set is copied for each instance) and its :class:`Param`."""
    metadata = {_KEY: Param(label, help, **spec)}
    if isinstance(default, list | dict | set):
        return field(default_factory=lambda: type(default)(default), metadata=metadata)
    return field(default=default, metadata=metadata)


@cache
def params_of(cls: type) -> tuple[ParamField, ...]:
    """The parameters of a dataclass made with :func:`param`, in declaration order (fields without a Param are
    not parameters: a caller's options, nested configs)."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        spec = f.metadata.get(_KEY)
        if spec is None:
            continue
        kind, optional = _kind(hints[f.name], f"{cls.__name__}.{f.name}")
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        as_tuple = typing.get_origin(_without_none(hints[f.name])) is tuple
        out.append(ParamField(f.name, kind, optional, _json(default), spec, as_tuple))
    return tuple(out)


def _without_none(hint: Any) -> Any:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and len(args) == 1:
        return args[0]
    return hint


def _kind(hint: Any, where: str) -> tuple[str, bool]:
    bare = _without_none(hint)
    optional = bare is not hint
    if typing.get_origin(bare) in (list, tuple, Sequence):
        return "list", optional
    if bare in (bool, int, float, str):
        return str(bare.__name__), optional
    raise TypeError(f"{where}: a parameter is a bool, int, float, str or a list of str, not {hint}")


def _json(value: Any) -> Any:
    return list(value) if isinstance(value, tuple | list) else value


def default_json(cls: type) -> dict[str, Any]:
    """The defaults of a method's parameters as JSON."""
    return {p.name: _json(p.default) for p in params_of(cls)}  # a list copied: the declaration's is shared


def as_json(params: Any) -> dict[str, Any]:
    """A parameters dataclass as the JSON object :func:`check_params` reads back."""
    cls: type = type(params)
    return {p.name: _json(getattr(params, p.name)) for p in params_of(cls)}


def check_params(cls: type, values: Mapping[str, Any], method: str = "") -> Any:
    """``cls`` made from ``values`` (names left out keep their defaults); a :class:`ParamError` names the first
    refused one: an unknown name, a wrong type, a value out of its bounds or choices, or what the dataclass's own
    ``__post_init__`` refuses. ``method`` names the method in the message of an unknown name."""
    fields = {p.name: p for p in params_of(cls)}
    for name in values:
        if name not in fields:
            where = f" for {method}" if method else ""
            raise ParamError(name, "", f"unknown training parameter {name!r}{where}")
    checked = {name: check_value(fields[name], value) for name, value in values.items()}
    return cls(**{name: tuple(value) if fields[name].as_tuple and value is not None else value
                  for name, value in checked.items()})


def check_value(p: ParamField, value: Any) -> Any:
    """``value`` as ``p`` stores it, or a ParamError saying what is wrong with it."""
    if value is None or (p.optional and not p.spec.scoped and value in (0, "") and not isinstance(value, bool)):
        if p.optional:
            return None
        raise _mistyped(p)
    if p.kind == "bool":
        if not isinstance(value, bool):
            raise _mistyped(p)
        return value
    if p.kind in ("int", "float"):
        return _number(p, value)
    if p.kind == "str":
        if not isinstance(value, str):
            raise _mistyped(p)
        if p.spec.choices and not p.spec.open and value not in _values(p):
            raise _refused(p, f"must be one of {', '.join(_values(p))}")
        return value
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise _mistyped(p)
    if p.spec.choices and not set(value) <= set(_values(p)):
        raise _refused(p, f"must be a list of {', '.join(_values(p))}")
    return list(value)


def _values(p: ParamField) -> list[str]:
    return [value for value, _ in p.spec.choices]


def _mistyped(p: ParamField, reason: str = "") -> ParamError:
    """A value of the wrong type: said by the type (or the declared ``noun``), whatever ``refusal`` says of values."""
    if not reason:
        noun = p.spec.noun or {"bool": "true or false", "int": "number", "float": "number", "str": "string",
                               "list": "list of strings"}[p.kind]
        reason = f"must be {noun}" if p.kind == "bool" and not p.spec.noun else f"must be a {noun}"
    return ParamError(p.name, reason, f"{p.name} {reason}{_null_note(p)}")


def _number(p: ParamField, value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _mistyped(p)
    if p.kind == "int" and not (math.isfinite(value) and float(value).is_integer()):
        raise _mistyped(p, "must be a whole number")
    if not math.isfinite(value):
        raise _mistyped(p, "must be a finite number")
    number: int | float = int(value) if p.kind == "int" else float(value)
    low, high, spec = p.spec.low, p.spec.high, p.spec
    if low is not None and low >= 0 > number:
        raise _refused(p, "must not be negative")
    too_low = low is not None and (number <= low if spec.above else number < low)
    too_high = high is not None and (number >= high if spec.below else number > high)
    if too_low or too_high:
        raise _refused(p, _range(spec))
    return number


def _range(spec: Param) -> str:
    low, high = format_number(spec.low), format_number(spec.high)
    if spec.low is not None and spec.high is not None:
        if spec.above or spec.below:
            return f"must be {'above' if spec.above else 'at least'} {low} and {'below' if spec.below else 'at most'} {high}"
        return f"must be between {low} and {high}"
    if spec.low is not None:
        return f"must be {'above' if spec.above else 'at least'} {low}"
    return f"must be {'below' if spec.below else 'at most'} {high}"


def _refused(p: ParamField, reason: str) -> ParamError:
    """A value out of its bounds or choices (the declared ``refusal``, where there is one, says so)."""
    return ParamError(p.name, reason, p.spec.refusal or f"{p.name} {reason}{_null_note(p)}")


def _null_note(p: ParamField) -> str:
    if not p.optional:
        return ""
    return f" (or null: {SCOPES_DEFAULT if p.spec.scoped else p.spec.unset or 'unset'})"


AUTO_DEVICE = "auto: the worker's GPU if it has one, else its CPU"


def device_param(**spec: Any) -> Any:
    """The device a run asks for: "" (auto), cpu, cuda or any device torch names (cuda:1)."""
    spec = {"main": True, "unset": AUTO_DEVICE, "open": True} | spec
    return param("", "Device asked for", "The scope's defaults follow the device.",
                 choices=(("", AUTO_DEVICE), ("cpu", "cpu"), ("cuda", "cuda (fails on a worker without a GPU)")),
                 **spec)


def delay_param() -> Any:
    """A test's hook: the run's progress reports sleep this long each (a worker can be killed mid-run)."""
    return param(0.0, "Delay per step (tests)", "Seconds slept at every progress report; keep 0.", hidden=True)


def format_number(value: float | None) -> str:
    """A number as a person writes it: 1000, 0.5, 2e-5 (not 2e-05)."""
    if value is None:
        return ""
    return f"{value:g}".replace("e-0", "e-").replace("e+0", "e+")


def scope_defaults(cls: type, scope: str) -> dict[str, Any]:
    """The values of ``cls``'s scoped parameters on ``scope`` (``full`` or ``student``); {} for a method without
    a training scope."""
    method = getattr(cls, "scope_defaults", None)
    return dict(method(scope)) if callable(method) else {}
