"""The parameters a run keeps besides its method's: ids of database rows, which only the web app knows.

A LATTE run keeps the index version it re-ranks over (``base_index``, fixed when queued), a HiPrBERT run the
dictionaries it trains on (``dictionaries``, filled in when queued), a DAN run the dictionary whose hierarchy a
level >= 1 reads (``hierarchy``). :mod:`webapp.training.runs` checks them against the database; here they are
declared, checked for their type and shown. A BioSyn run started from a hierarchy pre-training base encoder skips
its synonym pre-training whatever its params say (:class:`linker.methods.biosyn.BioSynRecipeConfig`): its rows
say so (:data:`OVER_HIERARCHY_BASE`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from linker.methods.params import Param, ParamError, ParamField, check_value

__all__ = ["ExtraParam", "Names", "extra_params", "OVER_HIERARCHY_BASE"]

Names = dict[str, dict[int, str]]  # {"dictionary": {id: slug}}: how ids read
MAX_ID = 2**31


def _dictionary(value: Any, names: Names) -> str:
    return names.get("dictionary", {}).get(value, f"#{value}")


@dataclass(frozen=True)
class ExtraParam:
    """One such parameter: a dictionary or index version id (0: the run's own), or a list of dictionary ids."""

    name: str
    spec: Param
    show: Callable[[Any, Names], str]
    ids: bool = False  # a list of ids, not one
    after: str = ""  # where a table shows it: after this parameter ("": first)

    @property
    def default(self) -> Any:
        return [] if self.ids else 0

    @property
    def field(self) -> ParamField:
        return ParamField(self.name, "list" if self.ids else "int", False, self.default, self.spec)

    def check(self, value: Any) -> Any:
        if not self.ids:
            number = check_value(self.field, value)
            if number >= MAX_ID:
                raise ParamError(self.name, f"must be an id, below {MAX_ID}")
            return number
        if not isinstance(value, list) or not all(
                isinstance(i, int) and not isinstance(i, bool) and 0 < i < MAX_ID for i in value):
            raise ParamError(self.name, "must be a list of ids", self.spec.refusal)
        return value


_EXTRA: dict[str, tuple[ExtraParam, ...]] = {
    "latte": (ExtraParam("base_index", Param(
        "Re-ranks index", "The index version it re-ranks over; 0: the dictionary's active one when queued.",
        unset="the active index when queued", main=True),
        lambda value, names: f"index {value}"),),
    "hiprbert": (ExtraParam("dictionaries", Param(
        "Dictionaries", "Ids of the dictionaries it trains on, the run's own first (filled in when queued).",
        unset="the run's dictionary", main=True, refusal="dictionaries must be a list of dictionary ids"),
        lambda value, names: ", ".join(_dictionary(i, names) for i in value), ids=True),),
    "dan": (ExtraParam("hierarchy", Param(
        "Hierarchy of", "The id of the dictionary whose hierarchy a level >= 1 reads; 0: the run's own.",
        unset="the run's dictionary", main=True), _dictionary, after="level"),),
}

# A BioSyn run from a hierarchy pre-training base: what its synonym pre-training rows say instead.
OVER_HIERARCHY_BASE: dict[str, dict[str, tuple[str, str]]] = {"biosyn": {
    "skip_pretrain": ("skipped", "the base encoder comes from hierarchy pre-training"),
    "pretrain_epochs": ("—", "not used: synonym pre-training is skipped"),
    "pretrain_max_pairs": ("—", "not used: synonym pre-training is skipped"),
}}


def extra_params(method: str) -> tuple[ExtraParam, ...]:
    """The web app's own parameters of ``method`` (none for most)."""
    return _EXTRA.get(method, ())
