"""The training methods the workbench offers: the table of :mod:`linker.recipe`, in its order.

A method registered there is a choice of :attr:`TrainingRun.method`, of the start form and of the API, with its
parameters (:mod:`webapp.training.params`) and its rows on the run page (:mod:`webapp.training.param_table`); the
web app needs a line for it only where it reads the database (:mod:`webapp.training.param_glue`,
:mod:`webapp.training.form_glue`)."""

from __future__ import annotations

import sys
from typing import Any

from django.db.models.enums import ChoicesType

from linker.methods.names import BUILT_IN
from webapp.training.errors import RunError

__all__ = ["DEFAULT_METHOD", "training_methods", "method_choices", "get_training_method", "RegisteredMethods"]

DEFAULT_METHOD = "biosyn"  # what a run trains when it names no method


def training_methods() -> list[Any]:
    """The registered methods (:class:`linker.methods.base.Method`), in the order a person is offered them."""
    from linker import recipe  # imports torch: not at model loading

    return list(recipe.METHODS.values())


def method_choices() -> list[tuple[str, str]]:
    """(name, label) of each registered method: the choices of ``TrainingRun.method``.

    Until :mod:`linker.recipe` is imported (it imports every method, torch included) nothing can have been
    registered or taken out, so the table is the built-in one, read from :mod:`linker.methods.names`: loading
    Django's apps (whose models and forms read these choices) imports no training code."""
    recipe = sys.modules.get("linker.recipe")
    if recipe is None:
        return list(BUILT_IN)
    return [(m.name, m.label or m.name) for m in recipe.METHODS.values()]


def get_training_method(name: str) -> Any:
    """The registered method called ``name``; a RunError names the known ones."""
    from linker import recipe

    method = recipe.METHODS.get(name)
    if method is None:
        raise RunError(f"unknown training method {name!r}; known: {', '.join(recipe.METHODS)}")
    return method


class RegisteredMethods(ChoicesType):
    """The metaclass of ``TrainingRun.Method``: its members name the built-in methods code refers to, and its
    ``choices``, ``values`` and ``labels`` are the registered ones (:func:`method_choices`), a method registered
    later included."""

    @property
    def choices(cls) -> list[tuple[str, str]]:  # type: ignore[override]
        return method_choices()
