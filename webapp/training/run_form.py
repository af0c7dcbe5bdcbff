"""The start-a-run form, made from the table of training methods (:mod:`webapp.training.methods`).

Every registered method is a choice; its parameters declared for a form (``Param.form``) are its fields, with their
defaults, bounds and help text (:mod:`webapp.training.param_fields`); the fields that choose among the workbench's
rows come from :mod:`webapp.training.form_glue`. The page shows only the chosen method's fields (``data-methods``),
and the form checks what it asks with the same :func:`webapp.training.params.clean_params` as the API, a refused
value shown by its field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django import forms

from linker.methods.base import BASE_ENCODER, WORD_VECTORS
from linker.methods.params import ParamField, scope_defaults
from linker.methods.word_vector_params import OWN_VECTOR_PARAMS
from webapp.corpus.models import Collection
from webapp.training.base_encoders import default_base_label
from webapp.training.errors import RunError
from webapp.training.form_glue import base_fields, form_glue
from webapp.training.held_out import check_held_out, run_training_data
from webapp.training.methods import training_methods
from webapp.training.models import WordVectorModel
from webapp.training.param_fields import form_message, form_value, param_form_field
from webapp.training.params import ParamRefused, clean_params, method_fields
from webapp.vocab.models import Dictionary

__all__ = ["StartRunForm", "FieldGroup"]


@dataclass
class FieldGroup:
    """Fields the page shows together: ``key`` (a method's name, "" for every run's, "base" for the base encoder),
    the methods they serve (``data-methods``), and the scopes' defaults of the method's parameters."""

    key: str
    legend: str
    methods: list[str]
    fields: list[forms.BoundField] = field(default_factory=list)
    intro: str = ""
    student: dict[str, Any] = field(default_factory=dict)

    @property
    def served(self) -> str:
        return " ".join(self.methods)


class StartRunForm(forms.Form):
    method = forms.ChoiceField(widget=forms.RadioSelect, required=False,
                               help_text="What the run trains; only its settings are shown.")
    dictionary = forms.ModelChoiceField(
        queryset=Dictionary.objects.order_by("slug"), to_field_name="slug", empty_label="Choose a dictionary",
        help_text="The run trains on its latest release.",
    )
    collections = forms.ModelMultipleChoiceField(
        queryset=Collection.objects.filter(has_gold=True).order_by("slug"), to_field_name="slug", required=False,
        label="Training collections",
        help_text="Gold mentions to train on (Ctrl-click for several); curator decisions are added.",
    )
    eval_collection = forms.ModelChoiceField(
        queryset=Collection.objects.filter(has_gold=True).order_by("slug"), to_field_name="slug", required=False,
        label="Evaluate on", empty_label="none: evaluate the index later",
        help_text="A held-out gold collection; one the run trains on, or sharing documents, is refused.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.methods = {m.name: m for m in training_methods()}
        method: forms.ChoiceField = self.fields["method"]  # type: ignore[assignment]
        method.choices = [(m.name, m.summary or m.label or m.name) for m in self.methods.values()]
        method.initial = next(iter(self.methods), "")
        self.served: dict[str, list[str]] = {}  # field -> the methods that read it
        self.param_fields: dict[str, dict[str, ParamField]] = {}  # method -> field name -> its parameter
        self.group_of: dict[str, tuple[str, str]] = {}  # field -> (group key, legend)
        self.leading: set[str] = set()  # fields that choose among the workbench's rows, first in their group
        self._params: dict[str, Any] = {}  # what clean() found the chosen method's fields ask for
        self._add_fields()
        base: forms.ModelChoiceField = self.fields["base_encoder"]  # type: ignore[assignment]
        base.empty_label = default_base_label()
        if not self.is_bound:
            self._preselect_single_choices()

    def _add(self, name: str, make: Any, method: str, key: str, legend: str) -> None:
        if name not in self.fields:
            self.fields[name] = make()
            self.group_of[name] = (key, legend)
        self.served.setdefault(name, []).append(method)

    def _add_fields(self) -> None:
        """Each method's fields, in the table's order: the base encoder's, its database fields, its parameters."""
        for name, make in base_fields().items():
            for m in self.methods.values():
                if m.base_model:
                    self._add(name, lambda made=make: made, m.name, "base", "Base encoder")
        for m in self.methods.values():
            glue = form_glue(m.name)
            own = {f.name: f for f in method_fields(m.name) if f.spec.form}
            self.param_fields[m.name] = {f.field_name: f for f in own.values()}
            after = {g.after: g for g in glue.fields if g.after}
            self.leading |= {g.name for g in glue.fields if not g.after}
            for g in (g for g in glue.fields if not g.after):
                self._add(g.name, g.make, m.name, g.group or m.name, g.group or m.heading)
            for f in own.values():
                key = f.spec.group or m.name
                self._add(f.field_name, lambda f=f, m=m: param_form_field(m.params_class, f), m.name, key,
                          f.spec.group or m.heading)
                if f.name in after:
                    self._add(after[f.name].name, after[f.name].make, m.name, m.name, m.heading)
        for name in ("collections", "eval_collection"):
            self.served[name] = [m.name for m in self.methods.values() if self._reads(m, name)]

    def _reads(self, method: Any, name: str) -> bool:
        if name == "collections":
            return form_glue(method.name).collections != "texts"
        return method.output not in (BASE_ENCODER, WORD_VECTORS)

    def _preselect_single_choices(self) -> None:
        """Where there is one dictionary, or one gold collection, there is nothing to choose: it is chosen."""
        for name, field_ in self.fields.items():
            if isinstance(field_, forms.BooleanField) and field_.initial:
                self.initial.setdefault(name, True)  # a query string may preselect; an unticked box in a POST is no
        dictionary: forms.ModelChoiceField = self.fields["dictionary"]  # type: ignore[assignment]
        dictionaries = list(dictionary.queryset[:2])  # type: ignore[index]
        if len(dictionaries) == 1:
            dictionary.empty_label = None
            self.initial.setdefault("dictionary", dictionaries[0].slug)
        gold = list(self.fields["collections"].queryset[:2])  # type: ignore[attr-defined]
        if len(gold) == 1:
            self.initial.setdefault("collections", [gold[0].slug])

    @property
    def field_methods(self) -> dict[str, str]:
        """The fields that only some of their group's methods read: field -> those methods (``data-methods``)."""
        groups: dict[str, set[str]] = {key: set() for key, _ in self.group_of.values()}
        for name, (key, _) in self.group_of.items():
            groups[key] |= set(self.served[name])
        out = {name: " ".join(self.served[name]) for name in ("collections", "eval_collection")
               if len(self.served[name]) < len(self.methods)}
        out |= {name: " ".join(self.served[name]) for name, (key, _) in self.group_of.items()
                if len(self.served[name]) < len(groups[key])}
        return out

    @property
    def OWN_VECTOR_FIELDS(self) -> set[str]:  # noqa: N802 (the template's name)
        """The fields of a BNE or DAN run's own fastText, hidden once it starts from word vectors."""
        return {f.field_name for m in self.methods for f in self.param_fields[m].values()
                if form_glue(m).own_vectors and f.name in OWN_VECTOR_PARAMS}

    @property
    def method_names(self) -> list[str]:
        return list(self.methods)

    def groups(self) -> list[FieldGroup]:
        """The fields as the page shows them: what every run needs, the base encoder, then each method's knobs."""
        first = FieldGroup("", "", [], [self["method"]] + [self[n] for n in ("dictionary", "collections", "eval_collection")])
        out: dict[str, FieldGroup] = {}
        for name, (key, legend) in self.group_of.items():
            group = out.setdefault(key, FieldGroup(key, legend, []))
            group.fields.append(self[name])
            group.methods += [m for m in self.served[name] if m not in group.methods]
        for group in out.values():  # what is chosen among the workbench's rows first, then the parameters
            group.fields.sort(key=lambda bound: bound.name not in self.leading)
        for group in out.values():
            if group.key in self.methods:
                m = self.methods[group.key]
                group.intro, group.student = m.description, _student(m.params_class)
        return [first, *out.values()]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        method = data.get("method") or next(iter(self.methods), "")
        entry, glue = self.methods.get(method), form_glue(method)
        if entry is None:
            return data
        dictionary = data.get("dictionary")
        if not entry.base_model:  # its base encoder fields are hidden: whatever the page still posted
            data["base_encoder"], data["base_model"] = None, ""
        if not self._reads(entry, "eval_collection"):
            data["eval_collection"] = None
        extra = [d for d in data.get("extra_dictionaries") or [] if d != dictionary]
        data["extra_dictionaries"] = extra if "extra_dictionaries" in self.param_fields_of(method) else []
        if glue.collections == "required" and not data.get("collections") and "collections" not in self.errors:
            self.add_error("collections", self.fields["collections"].error_messages["required"])
        if glue.check is not None:
            glue.check(self, data)
        self._params = self._clean_params(method, data) | (glue.params(data) if glue.params else {})
        if data.get("base_encoder") and data.get("base_model"):
            self.add_error("base_model", "Choose a base encoder or type a folder, not both.")
        self._check_collections(method, data)
        return data

    def param_fields_of(self, method: str) -> set[str]:
        """The names of every field ``method`` reads."""
        return {name for name, methods in self.served.items() if method in methods}

    def _clean_params(self, method: str, data: dict[str, Any]) -> dict[str, Any]:
        """The params the chosen method's fields ask for (an empty field: its default), checked as the API checks
        them; a refused value is an error of its field."""
        fields = self.param_fields[method]
        chosen: dict[str, Any] = {}
        for name, p in fields.items():
            value = form_value(p, data.get(name))
            if value == [] and p.spec.empty:
                self.add_error(name, p.spec.empty)
            elif value is not None and name not in self.errors:
                chosen[p.name] = value
        if any(name in self.errors for name in fields):
            return {"method": method} | chosen
        try:
            clean_params(chosen, method)
        except ParamRefused as exc:
            where = next((name for name, p in fields.items() if p.name == exc.param), None)
            message = form_message(fields[where], exc.reason, str(exc)) if where else str(exc)
            self.add_error(where, message)
        except RunError as exc:
            self.add_error(None, str(exc))
        return {"method": method} | chosen

    def _check_collections(self, method: str, data: dict[str, Any]) -> None:
        dictionary, evaluation = data.get("dictionary"), data.get("eval_collection")
        allowed = {d.pk for d in (dictionary, *data.get("extra_dictionaries", [])) if d is not None}
        own_collections = list(self.run_collections()) if form_glue(method).collections != "texts" else []
        for collection in own_collections + ([evaluation] if evaluation else []):
            if dictionary is not None and collection.dictionary_id not in (None, *allowed):
                self.add_error(None, f"{collection} links to another dictionary ({collection.dictionary}).")
        if evaluation is not None and "eval_collection" not in self.errors:
            base = data.get("base_encoder")
            try:  # the service's own check (start_run repeats it, with a LATTE run's base index too)
                check_held_out(evaluation, run_training_data(own_collections, base.artifact_path if base else
                                                              data.get("base_model") or ""))
            except RunError as exc:
                self.add_error("eval_collection", str(exc))

    def params(self) -> dict[str, Any]:
        """The chosen method's params (with ``method``) from its fields; those left empty keep their defaults."""
        return dict(self._params)

    def run_collections(self) -> list[Collection]:
        """What the run trains on: a method that reads texts the documents of any collections, the others gold ones."""
        data = self.cleaned_data
        texts = form_glue(data.get("method") or "").collections == "texts"
        return list(data.get("text_collections" if texts else "collections") or [])

    def run_word_vectors(self) -> WordVectorModel | None:
        data = self.cleaned_data
        reads = "word_vectors" in self.param_fields_of(data.get("method") or "")
        return data.get("word_vectors") if reads else None


def _student(cls: type) -> dict[str, Any]:
    try:
        return scope_defaults(cls, "student")
    except (KeyError, ValueError):
        return {}
