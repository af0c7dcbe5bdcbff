"""Base encoders: the Hugging Face folders that BioSyn runs and index builds start from.

The default is the base model (MiniLM-L6, or ``LINKER_BASE_MODEL``); a hierarchy pre-training run
(HiPrBERT) records another as an :class:`EncoderModel` of method ``hiprbert``. Choosing one sets a run's
``base_model`` to its folder, which is all the linker needs; the run's encoder keeps it as its ``parent``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import QuerySet

from webapp.artifacts.manifests import is_available
from webapp.linking.models import EncoderModel, IndexVersion
from webapp.training.errors import RunError
from webapp.training.hierarchy_report import HierarchyReport, hierarchy_report
from webapp.training.models import TrainingRun

__all__ = ["BaseEncoderRow", "base_encoder_rows", "base_encoders", "check_base_encoder", "default_base_label", "describe", "get_base_encoder", "started_from"]


def base_encoders() -> QuerySet[EncoderModel]:
    """Every base encoder a run or an index build may start from, newest first."""
    return EncoderModel.objects.filter(method=EncoderModel.Method.HIPRBERT).order_by("-created_at", "-id")


def describe(encoder: EncoderModel) -> str:
    """A choice's label: its name, what it was trained on, and its date."""
    sources = ", ".join(str(s) for s in encoder.config.get("dictionaries") or ())
    return f"{encoder.name} ({sources + '; ' if sources else ''}{encoder.created_at:%Y-%m-%d})"


def default_base_label() -> str:
    from linker.encoders.transformer import default_base_model

    try:
        folder = default_base_model()
    except (FileNotFoundError, ModuleNotFoundError) as exc:
        return f"the default base model (unavailable: {exc})"
    # The wheel's folder is called "model": its package names it better.
    name = folder.parent.name if folder.name == "model" else folder.name
    return f"the default base model ({name})"


def get_base_encoder(name: str) -> EncoderModel:
    """The base encoder called ``name``, or a RunError saying why it cannot be started from."""
    encoder = EncoderModel.objects.filter(name=name).first()
    if encoder is None:
        raise RunError(f"no encoder model named {name!r}")
    check_base_encoder(encoder)
    return encoder


def check_base_encoder(encoder: EncoderModel) -> None:
    if encoder.method != EncoderModel.Method.HIPRBERT:
        raise RunError(f"encoder {encoder.name!r} is a {encoder.get_method_display()}, not a base encoder "
                       "(hierarchy pre-training makes those)")
    if not is_available(encoder.artifact_path):
        raise RunError(f"base encoder {encoder.name!r}: its folder {encoder.artifact_path} is gone")


def started_from(base_model: str) -> EncoderModel | None:
    """The base encoder whose folder ``base_model`` is, if any (a run's provenance)."""
    if not base_model:
        return None
    return base_encoders().filter(artifact_path=base_model).first()


@dataclass(frozen=True)
class BaseEncoderRow:
    """One base encoder as the models page lists it: what it learnt from, its scores, the indexes built with it."""

    encoder: EncoderModel
    run: TrainingRun | None
    report: HierarchyReport | None
    indexes: list[IndexVersion] = field(default_factory=list)
    folder_exists: bool = True
    # The runs that started from it, newest first, each with its Acc@1 and Acc@5 (None: not evaluated).
    runs_from: list[tuple[TrainingRun, float | None, float | None]] = field(default_factory=list)

    @property
    def first_dictionary(self) -> str:
        """The slug of the first dictionary it was trained on: the likeliest one to index with it."""
        return next(iter(self.encoder.config.get("dictionaries") or ()), "")


def base_encoder_rows(limit: int = 50) -> list[BaseEncoderRow]:
    """The newest base encoders with their runs, index versions and the runs started from them (four queries
    whatever their number)."""
    encoders = list(base_encoders().select_related("parent")[:limit])
    runs = {r.encoder_id: r for r in TrainingRun.objects.filter(encoder__in=encoders)}
    indexes: dict[int, list[IndexVersion]] = {}
    for index in IndexVersion.objects.filter(encoder__in=encoders).select_related("dictionary", "dictionary_version"):
        indexes.setdefault(index.encoder_id or 0, []).append(index)
    # A run records the folder it started from (its encoder does not exist until it succeeds).
    by_folder: dict[str, list[tuple[TrainingRun, float | None, float | None]]] = {}
    for run in (TrainingRun.objects.filter(base_model__in=[e.artifact_path for e in encoders])
                .select_related("eval_collection").order_by("-created_at", "-pk")):
        metrics = run.metrics or {}
        by_folder.setdefault(run.base_model, []).append((run, metrics.get("acc@1"), metrics.get("acc@5")))
    return [
        BaseEncoderRow(e, runs.get(e.pk), hierarchy_report(e), indexes.get(e.pk, []), is_available(e.artifact_path),
                       by_folder.get(e.artifact_path, []))
        for e in encoders
    ]
