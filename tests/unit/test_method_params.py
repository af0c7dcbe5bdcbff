"""A method's parameters are one dataclass (linker.methods.params): every registered method's round-trips through
JSON and makes its config, and a refused value is named with the reason."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from linker.methods.base import RunContext
from linker.methods.params import ParamError, as_json, check_params, default_json, param, params_of
from linker.recipe import METHODS


@dataclass
class Knobs:
    size: int = param(8, "Size", "How big.", low=1, high=64, main=True, form=True)
    rate: float | None = param(None, "Rate", "Empty: the scope's.", low=0, above=True, scoped=True)
    kinds: list[str] = param(["a"], "Kinds", choices=(("a", "A"), ("b", "B")))
    cap: int | None = param(None, "Cap", "0 or empty: all.", unset="all")
    mode: str = param("fast", "Mode", choices=(("fast", "fast"), ("slow", "slow")), refusal="mode is fast or slow")


@pytest.mark.parametrize("name", sorted(METHODS))
def test_each_methods_defaults_round_trip_and_make_its_config(name: str) -> None:
    method = METHODS[name]
    defaults = default_json(method.params_class)
    values = check_params(method.params_class, defaults, name)
    assert as_json(values) == defaults
    assert isinstance(method.configure(values, RunContext(device="cpu")), method.config_class)
    assert method.label and method.summary
    assert all(p.spec.help for p in params_of(method.params_class) if p.spec.form)  # a form field says what it is for


def test_values_are_checked_by_their_declaration() -> None:
    assert check_params(Knobs, {"size": 3.0, "cap": 0, "kinds": ["b", "a"]}) == Knobs(size=3, cap=None, kinds=["b", "a"])
    for values, name, message in [
        ({"sise": 3}, "sise", "unknown training parameter 'sise' for knobs"),
        ({"size": 65}, "size", "size must be between 1 and 64"),
        ({"size": 2.5}, "size", "size must be a whole number"),
        ({"size": True}, "size", "size must be a number"),
        ({"size": -1}, "size", "size must not be negative"),
        ({"rate": 0}, "rate", "rate must be above 0 (or null: the scope's default)"),
        ({"rate": float("inf")}, "rate", "rate must be a finite number (or null: the scope's default)"),
        ({"kinds": ["c"]}, "kinds", "kinds must be a list of a, b"),
        ({"kinds": "a"}, "kinds", "kinds must be a list of strings"),
        ({"cap": "x"}, "cap", "cap must be a number (or null: all)"),
        ({"mode": "warp"}, "mode", "mode is fast or slow"),
        ({"mode": 3}, "mode", "mode must be a string"),  # the refusal is about values, not types
    ]:
        with pytest.raises(ParamError) as refused:
            check_params(Knobs, values, "knobs")
        assert (refused.value.name, str(refused.value)) == (name, message)


def test_a_list_default_is_not_shared() -> None:
    first, second = Knobs(), Knobs()
    first.kinds.append("b")
    assert second.kinds == ["a"] and default_json(Knobs)["kinds"] == ["a"]
