"""Evaluation data must be held out of training: the one check that every way of choosing it goes through.

A model scored on the mentions it was trained on reports what it memorised (Acc@1 near 1.000 on a training
collection), not how it links text it has not seen. :func:`check_held_out` refuses such an evaluation with the
reason, wherever it is chosen: the start form's "Evaluate on" (:class:`webapp.training.forms.StartRunForm`),
``POST /api/training-runs/`` and ``train_run --eval-collection`` (all through
:func:`webapp.training.runs.start_run`), and an index's "Evaluate" (:func:`webapp.training.evaluation.start_evaluation`).

The training data of a model are the gold collections of the runs that trained its encoder and of every encoder
it started from (a HiPrBERT base encoder's extra names, a LATTE re-ranker's base index): :func:`trained_collections`.
A collection overlaps them when it is one of them or holds one of their documents (the same text, or the same
document id: one abstract imported twice). Curator decisions are training data too, from any collection, so
an evaluation collection whose documents curators decided before a run was queued overlaps partly: that cannot
be known before the run records its snapshot, so it is not refused but flagged on the result
(:func:`run_overlap`, :func:`index_overlap`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db.models import Q
from django.db.models.functions import MD5

from webapp.corpus.models import Collection, Document
from webapp.linking.models import EncoderModel, IndexVersion
from webapp.training.errors import RunError
from webapp.training.models import TrainingExample, TrainingRun

__all__ = ["TrainingOverlap", "check_held_out", "find_overlap", "index_overlap", "run_overlap", "run_training_data",
           "trained_collections"]

SHOWN_IDS = 3  # document ids named in a reason


@dataclass(frozen=True)
class TrainingOverlap:
    """How an evaluation collection overlaps a model's training data (nothing: no overlap)."""

    evaluation: Collection
    subject: str  # "this run", "index 7": what was (or would be) evaluated
    same: bool = False  # the evaluation collection is a training collection
    shared: list[tuple[Collection, int, list[str]]] = field(default_factory=list)  # (training collection, documents, some ids)
    curated: int = 0  # training pairs from curator decisions on documents of the evaluation collection

    @property
    def refused(self) -> bool:
        """The whole collection, or some of its documents, were training data: the score means nothing."""
        return self.same or bool(self.shared)

    def __bool__(self) -> bool:
        return self.refused or self.curated > 0

    @property
    def reason(self) -> str:
        name = self.evaluation.slug
        if self.same:
            return (f"{name} is training data of {self.subject}: evaluated on it, a model scores what it memorised "
                    f"(Acc@1 near 1.000), not how it links unseen text. Choose a gold collection held out of training.")
        if self.shared:
            said = "; ".join(f"{count} with {c.slug} ({', '.join(ids)}{', …' if count > len(ids) else ''})"
                             for c, count, ids in self.shared)
            return (f"{name} shares documents with the training data of {self.subject}: {said}. A score on them "
                    f"measures memory, not linking. Choose a gold collection held out of training.")
        if self.curated:
            return (f"{self.curated} training pair{'s' if self.curated != 1 else ''} of {self.subject} came from "
                    f"curator decisions on documents of {name}: those mentions were seen in training, so the score "
                    f"on {name} is optimistic.")
        return ""

    @property
    def label(self) -> str:
        """A short flag for a table cell."""
        if self.refused:
            return "evaluated on its own training data"
        return "partly seen in training" if self.curated else ""


def trained_collections(encoder: EncoderModel | None) -> list[Collection]:
    """The gold collections whose mentions trained ``encoder``: those of the runs that made it and of the encoders
    it started from (its ``parent`` chain). Word vectors (fastText) learn no links and do not count."""
    # fastText runs make word vectors, never an encoder: no run found here learnt from text alone.
    return list(Collection.objects.filter(training_runs__encoder_id__in=_chain(encoder)).distinct())


def _chain(encoder: EncoderModel | None) -> list[int]:
    """The ids of ``encoder`` and of the encoders it started from."""
    seen: list[int] = []
    while encoder is not None and encoder.pk not in seen:
        seen.append(encoder.pk)
        encoder = encoder.parent
    return seen


def find_overlap(evaluation: Collection, training: Iterable[Collection], subject: str,
                 runs: Iterable[TrainingRun] = ()) -> TrainingOverlap:
    """How ``evaluation`` overlaps the ``training`` collections (and the snapshots of ``runs``: their curator
    decisions on its documents)."""
    training = list(dict.fromkeys(c for c in training if c is not None))
    same = any(c.pk == evaluation.pk for c in training)
    shared: list[tuple[Collection, int, list[str]]] = []
    others = [c for c in training if c.pk != evaluation.pk]
    if others and not same:
        mine = Document.objects.filter(collection=evaluation).annotate(text_md5=MD5("text"))
        for other in others:
            theirs = Document.objects.filter(collection=other)
            both = mine.filter(Q(external_id__in=theirs.values("external_id"))
                               | Q(text_md5__in=theirs.annotate(h=MD5("text")).values("h")))
            count = both.count()
            if count:
                shared.append((other, count, list(both.order_by("external_id").values_list("external_id", flat=True)[:SHOWN_IDS])))
    run_ids = [r.pk for r in runs]
    curated = TrainingExample.objects.filter(
        run_id__in=run_ids, negative=False, source=TrainingExample.Source.CURATOR,
        decision__document__collection=evaluation,
    ).count() if run_ids else 0
    return TrainingOverlap(evaluation, subject, same, shared, curated)


def check_held_out(evaluation: Collection | None, training: Iterable[Collection], subject: str = "this run") -> None:
    """Refuse (RunError, with the reason) to evaluate on ``evaluation`` when it is, or shares documents with, one
    of the ``training`` collections."""
    if evaluation is None:
        return
    overlap = find_overlap(evaluation, training, subject)
    if overlap.refused:
        raise RunError(overlap.reason)


def run_training_data(collections: Iterable[Collection], base_model: str = "",
                      base_index: IndexVersion | None = None) -> list[Collection]:
    """What a run learns from, as known before it trains: its gold collections and those that trained the
    encoders it starts from (a base encoder's folder ``base_model``, a LATTE run's ``base_index``)."""
    from webapp.training.base_encoders import started_from

    found = list(collections) + trained_collections(started_from(base_model))
    if base_index is not None:
        found += trained_collections(base_index.encoder)
    return found


def run_overlap(run: TrainingRun) -> TrainingOverlap | None:
    """The flag for a run's own evaluation (on ``eval_collection``), or None when it was held out."""
    if run.eval_collection is None:
        return None
    base_index = None
    if run.method == TrainingRun.Method.LATTE and run.params.get("base_index"):
        base_index = IndexVersion.objects.filter(pk=run.params["base_index"]).select_related("encoder").first()
    training = run_training_data(run.collections.all(), run.base_model, base_index)
    runs = [run, *TrainingRun.objects.filter(encoder_id__in=_chain(run.encoder)).exclude(pk=run.pk)]
    return find_overlap(run.eval_collection, training, f"run {run.pk}", runs) or None


def index_overlap(index: IndexVersion, evaluation: Collection) -> TrainingOverlap | None:
    """The flag for an evaluation of ``index`` on ``evaluation``, or None when it was held out."""
    runs = TrainingRun.objects.filter(encoder_id__in=_chain(index.encoder))
    return find_overlap(evaluation, trained_collections(index.encoder), f"index {index.pk}", runs) or None
