"""What an index build may combine: the encoders that can be indexed, the fast ones that can stand in front of a
transformer as its first stage, and the checks every way of starting a build shares (the models page, ``POST
/api/index-versions/``, ``manage.py build_index``).

A first stage is a BNE or DAN encoder indexed beside the transformer (``Linker.build(first_stage_encoder=...)``,
``RetrievalConfig.cascade="exact"``): the transformer then encodes only the mentions that are not a dictionary name
as they stand. An exact name scores the maximum under any encoder, so no top concept changes; most mentions skip the
transformer. A BNE or DAN linker is fast already and takes none.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from django.db.models import QuerySet

from webapp.linking.models import EncoderModel
from webapp.training.errors import RunError
from webapp.training.models import TrainingRun
from webapp.vocab.models import Dictionary

__all__ = ["FAST_KINDS", "IndexBuildError", "check_index_build", "describe", "dictionaries_of", "encoder_dictionary", "fast_encoders",
           "indexable_encoders", "suggested_first_stage"]

FAST_KINDS = ("bne", "dan")


class IndexBuildError(RunError):
    """A build that cannot be made as asked; ``field`` is the choice at fault (``encoder`` or ``first_stage``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def indexable_encoders() -> QuerySet[EncoderModel]:
    """Every encoder an index can be built with, newest first: transformers (base models, BioSyn, LATTE's linker,
    imported artifacts), HiPrBERT base encoders (zero-shot), BNE and DAN."""
    return EncoderModel.objects.order_by("-created_at", "-id")


def fast_encoders() -> list[EncoderModel]:
    """The BNE and DAN encoders (an imported artifact by its encoder.json), newest first."""
    maybe = indexable_encoders().filter(method__in=[*EncoderModel.KINDS, EncoderModel.Method.IMPORTED])
    return [e for e in maybe if e.kind in FAST_KINDS]


def encoder_dictionary(encoder: EncoderModel) -> Dictionary | None:
    """The dictionary the encoder was trained on: its training run's (a base model or an imported artifact records
    none)."""
    run = TrainingRun.objects.filter(encoder=encoder).select_related("dictionary").order_by("-pk").first()
    return run.dictionary if run is not None else None


def dictionaries_of(encoders: Iterable[EncoderModel]) -> dict[int, Dictionary]:
    """:func:`encoder_dictionary` of many encoders in one query (encoder pk -> dictionary)."""
    runs = TrainingRun.objects.filter(encoder__in=list(encoders)).select_related("dictionary").order_by("pk")
    return {run.encoder_id: run.dictionary for run in runs if run.encoder_id is not None}


def describe(encoder: EncoderModel, dictionary: Dictionary | None = None) -> str:
    """A choice's label: name, kind (a HiPrBERT one is a base encoder), the dictionary it was trained on where it
    records one, its date: "dan-run-4 (DAN, medic, 2026-11-23)"."""
    kind = encoder.kind_label + (" base encoder" if encoder.method == EncoderModel.Method.HIPRBERT else "")
    trained_on = f", {dictionary.slug}" if dictionary is not None else ""
    return f"{encoder.name} ({kind}{trained_on}, {encoder.created_at:%Y-%m-%d})"


def check_index_build(dictionary: Dictionary, encoder: EncoderModel | None, first_stage: EncoderModel | None) -> None:
    """Raise :class:`IndexBuildError` naming the problem when ``encoder`` (None: tf-idf only) with ``first_stage``
    cannot index ``dictionary``."""
    if encoder is not None and not Path(encoder.artifact_path).is_dir():
        raise IndexBuildError("encoder", f"encoder {encoder.name!r}: its folder {encoder.artifact_path} is gone")
    if first_stage is None:
        return
    if first_stage.kind not in FAST_KINDS:
        raise IndexBuildError("first_stage", f"first stage {first_stage.name!r} is a {first_stage.kind_label} encoder; "
                                             "a first stage is a fast BNE or DAN encoder")
    if encoder is None:
        raise IndexBuildError("first_stage", "a first stage stands in front of a transformer encoder, and a sparse-only "
                                             "(tf-idf) index has none: choose a transformer encoder, or no first stage")
    if encoder.kind != "transformer":
        raise IndexBuildError("first_stage", f"encoder {encoder.name!r} is a {encoder.kind_label} encoder, fast already: "
                                             f"a {encoder.kind_label} linker needs no first stage")
    trained_on = encoder_dictionary(first_stage)
    if trained_on is not None and trained_on.pk != dictionary.pk:
        raise IndexBuildError("first_stage", f"first stage {first_stage.name!r} was trained on dictionary "
                                             f"{trained_on.slug!r}, not {dictionary.slug!r}")
    if not Path(first_stage.artifact_path).is_dir():
        raise IndexBuildError("first_stage", f"first stage {first_stage.name!r}: its folder {first_stage.artifact_path} is gone")


def suggested_first_stage(dictionary: Dictionary | None, encoder: EncoderModel | None) -> EncoderModel | None:
    """For a transformer build, the dictionary's newest BNE/DAN encoder whose folder is there (None otherwise): the
    CPU default, since the first stage leaves every top candidate as the transformer ranks it."""
    if dictionary is None or encoder is None or encoder.kind != "transformer":
        return None
    runs = TrainingRun.objects.filter(dictionary=dictionary, state=TrainingRun.State.SUCCEEDED,
                                      method__in=list(EncoderModel.KINDS), encoder__isnull=False)
    for run in runs.select_related("encoder").order_by("-encoder__created_at", "-encoder_id"):
        assert run.encoder is not None
        if Path(run.encoder.artifact_path).is_dir():
            return run.encoder
    return None
