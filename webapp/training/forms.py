"""The models page's forms: word-vector uploads, and index builds (any encoder, with an optional BNE/DAN first
stage). The start-a-run form is :mod:`webapp.training.run_form`."""

from __future__ import annotations

from typing import Any

from django import forms
from django.urls import reverse

from linker.methods.word_vector_params import MAX_DIM
from webapp.linking.models import EncoderModel
from webapp.training.index_builds import (
    IndexBuildError,
    check_index_build,
    dictionaries_of,
    fast_encoders,
    indexable_encoders,
    suggested_first_stage,
)
from webapp.training.index_builds import describe as describe_encoder
from webapp.vocab.models import Dictionary


class WordVectorUploadForm(forms.Form):
    """An admin's word-vector file: read by :func:`webapp.training.word_vectors.upload_word_vectors`."""

    # An empty file is the service's to refuse: its message names the file.
    file = forms.FileField(label="Word-vector file", allow_empty_file=True, help_text="fastText .bin, word2vec .bin, or text .vec/.txt.")
    name = forms.SlugField(max_length=120, required=False, help_text="Empty: from the file's name.")
    dim = forms.IntegerField(min_value=1, max_value=MAX_DIM, required=False, label="Expected dimension",
                             help_text="Refuse the file unless its vectors have this dimension; empty: any.")
    dictionary = forms.ModelChoiceField(
        queryset=Dictionary.objects.order_by("slug"), to_field_name="slug", required=False,
        label="Coverage of the names of", help_text="Measures the share of this dictionary's name words the file knows.",
        empty_label="no dictionary (coverage not measured)",
    )


class EncoderChoiceField(forms.ModelChoiceField):
    """An encoder labelled with its kind and the dictionary it was trained on (``trained_on``, filled by the form)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.trained_on: dict[int, Dictionary] = {}

    def label_from_instance(self, obj: EncoderModel) -> str:
        return describe_encoder(obj, self.trained_on.get(obj.pk))


FIRST_STAGE_HELP = ("the transformer then encodes only mentions that are not a dictionary name; top candidates "
                    "unchanged")


class IndexBuildForm(forms.Form):
    """The models page's "Build an index": a dictionary's latest release with any encoder (none: tf-idf only) and,
    in front of a transformer, an optional BNE/DAN first stage. :meth:`for_choice` makes the unbound form with the
    newest fitting choices preselected (re-rendered by htmx when the dictionary or the encoder changes)."""

    dictionary = forms.ModelChoiceField(queryset=Dictionary.objects.order_by("slug"), to_field_name="slug",
                                        label="Dictionary", help_text="Its latest release is indexed.")
    encoder = EncoderChoiceField(
        queryset=indexable_encoders(), to_field_name="name", required=False, label="Encoder",
        empty_label="none: tf-idf only",
        help_text="A transformer ranks best; BNE and DAN encode names far faster on a CPU.",
    )
    # Every encoder is accepted here so that a wrong one is refused by name (clean), not as "not a valid choice";
    # only BNE and DAN encoders are offered.
    first_stage = EncoderChoiceField(queryset=EncoderModel.objects.all(), to_field_name="name", required=False,
                                     label="First stage", empty_label="none: the transformer encodes every mention")
    # Ticked on the page; left out of a POST (the base encoders' own build forms, scripts): built, not activated.
    activate = forms.BooleanField(
        required=False, initial=True, label="Activate when built",
        help_text="It serves at once and the open mentions are re-linked; untick to compare it first.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", "build-%s")  # the base encoders' own build forms share the field names
        super().__init__(*args, **kwargs)
        # Choosing another dictionary or encoder re-renders the form with the first stage that fits them.
        refresh = {"hx-get": reverse("training:models"), "hx-target": "#index-build", "hx-swap": "outerHTML",
                   "hx-include": "#build-dictionary, #build-encoder"}
        self.fields["dictionary"].widget.attrs.update(refresh)
        self.fields["encoder"].widget.attrs.update(refresh)
        encoders = list(indexable_encoders())
        fast = fast_encoders()
        trained_on = dictionaries_of(encoders)
        self.fields["encoder"].trained_on = trained_on  # type: ignore[attr-defined]
        self.fields["first_stage"].trained_on = trained_on  # type: ignore[attr-defined]
        self.fields["first_stage"].choices = [("", self.fields["first_stage"].empty_label)] + [  # type: ignore[attr-defined]
            (e.name, describe_encoder(e, trained_on.get(e.pk))) for e in fast]
        self.suggested: EncoderModel | None = None
        self.fields["first_stage"].help_text = (
            f"Optional, for a transformer encoder: a BNE or DAN encoder of the same dictionary searched first; "
            f"{FIRST_STAGE_HELP}.")

    @classmethod
    def for_choice(cls, dictionary_slug: str | None = None, encoder_name: str | None = None) -> IndexBuildForm:
        """Unbound, with ``dictionary_slug`` (default: the first dictionary) and ``encoder_name`` ("": tf-idf only;
        None: the newest transformer trained on that dictionary, else the newest recording no dictionary), and the
        first stage :func:`suggested_first_stage` picks."""
        dictionaries = Dictionary.objects.order_by("slug")
        dictionary = dictionaries.filter(slug=dictionary_slug).first() if dictionary_slug else None
        dictionary = dictionary or dictionaries.first()
        if encoder_name is None:
            encoder = _default_encoder(dictionary)
        else:
            encoder = EncoderModel.objects.filter(name=encoder_name).first() if encoder_name else None
        suggested = suggested_first_stage(dictionary, encoder)
        form = cls(initial={"dictionary": dictionary, "encoder": encoder, "first_stage": suggested})
        form.suggested = suggested
        if encoder is None or encoder.kind != "transformer":
            # Shown, not offered: only a transformer takes one (submitted anyway, it is refused by name).
            form.fields["first_stage"].widget.attrs["disabled"] = True
            form.fields["first_stage"].help_text = (
                "Only for a transformer encoder: " + (
                    "a tf-idf-only index has none to stand in front of." if encoder is None
                    else f"a {encoder.kind_label} linker is fast already."))
        elif suggested is not None:
            form.fields["first_stage"].help_text = (
                f"Preselected: the newest {suggested.kind_label} encoder of {dictionary}. {FIRST_STAGE_HELP[0].upper()}"
                f"{FIRST_STAGE_HELP[1:]}.")
        return form

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        dictionary = data.get("dictionary")
        if dictionary is not None and "encoder" in data and "first_stage" in data:
            try:
                check_index_build(dictionary, data["encoder"], data["first_stage"])
            except IndexBuildError as exc:
                self.add_error(exc.field, str(exc))
        return data


def _default_encoder(dictionary: Dictionary | None) -> EncoderModel | None:
    transformers = [e for e in indexable_encoders() if e.kind == "transformer"]
    trained_on = dictionaries_of(transformers)
    mine = [e for e in transformers if dictionary is not None and trained_on.get(e.pk) == dictionary]
    unattached = [e for e in transformers if e.pk not in trained_on]
    return next(iter(mine + unattached), None)
