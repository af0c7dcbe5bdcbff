"""A method's parameter as a field of the start form, made from its declaration (:class:`linker.methods.params.Param`).

A number is a number input with the declared bounds, a string with choices a select, a list with choices boxes to
tick, a free list a comma-separated text, a bool a box. Every field may be left empty: the run then keeps the
parameter's default, and the field shows what that is (its initial value, or a placeholder: "all", "10 on a GPU, 1
on a CPU" for a scoped one). :func:`form_value` and :func:`form_message` go the other way.
"""

from __future__ import annotations

from typing import Any

from django import forms

from linker.methods.params import ParamField, format_number, scope_defaults

__all__ = ["param_form_field", "form_value", "form_message", "scoped_text"]

SCOPED_PLACEHOLDER = "{full} on a GPU, {student} on a CPU"


def scoped_text(cls: type, p: ParamField, text: str) -> str:
    """``text`` with {full} and {student} replaced by the parameter's default on each scope."""
    if not p.spec.scoped or "{" not in text:
        return text
    values = {}
    for scope in ("full", "student"):
        value = scope_defaults(cls, scope).get(p.name)
        values[scope] = p.spec.unset if p.spec.unset and not value else format_number(value)
    return text.format(**values)


def _left_empty(p: ParamField) -> bool:
    """Whether the field starts empty, its default said by a placeholder rather than a value."""
    return p.default is None or p.spec.scoped or bool(p.spec.unset and not p.default and p.kind != "bool")


def param_form_field(cls: type, p: ParamField) -> forms.Field:
    """The form field of parameter ``p`` of the dataclass ``cls``."""
    spec = p.spec
    common: dict[str, Any] = {"required": False, "label": spec.ask or spec.label,
                              "help_text": scoped_text(cls, p, spec.help)}
    empty = _left_empty(p)
    placeholder = scoped_text(cls, p, spec.placeholder or SCOPED_PLACEHOLDER) if spec.scoped else spec.unset
    attrs = {"placeholder": placeholder} if empty and placeholder else {}
    initial = None if empty else p.default
    if p.kind == "bool":
        return forms.BooleanField(initial=p.default, **common)
    if p.kind == "int":
        low, high = (None if b is None else int(b) for b in (spec.low, spec.high))
        return forms.IntegerField(min_value=low, max_value=high, initial=initial, widget=forms.NumberInput(attrs=attrs),
                                  **common)
    if p.kind == "float":
        return forms.FloatField(min_value=spec.low, max_value=spec.high, initial=initial,
                                widget=forms.NumberInput(attrs=attrs), **common)
    if p.kind == "list" and spec.choices:
        return forms.MultipleChoiceField(choices=spec.choices, initial=initial, widget=forms.CheckboxSelectMultiple,
                                         **common)
    if p.kind == "list":
        return forms.CharField(max_length=500, initial=", ".join(initial or []), widget=forms.TextInput(attrs=attrs),
                               **common)
    if spec.choices:
        return forms.ChoiceField(choices=spec.choices, initial=initial, **common)
    return forms.CharField(max_length=500, initial=initial, widget=forms.TextInput(attrs=attrs), **common)


def form_value(p: ParamField, value: Any) -> Any:
    """What the form's cleaned ``value`` asks of the parameter; None: the field was left empty (its default)."""
    if p.kind == "bool":
        return bool(value)
    if p.kind == "list" and isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()] or None
    if p.kind == "list" and not p.spec.choices:
        return value or None
    return None if value in (None, "") else value


def form_message(p: ParamField, reason: str, message: str) -> str:
    """A refusal as the form says it, by the field's label: "The learning rate must be above 0 …"."""
    if p.spec.refusal or not reason:
        return message
    label = p.spec.label
    if len(label) > 1 and label[1].islower():
        label = label[0].lower() + label[1:]
    return f"The {label} {reason}."
