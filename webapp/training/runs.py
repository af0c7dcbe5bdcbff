"""Training runs from the outside: queue one, cancel one.

A run's life: :func:`start_run` creates the row ``queued`` and queues ``tasks.training.train_task`` after
commit; the worker runs it (:mod:`webapp.training.execution`). Each change of state is a method of
:class:`TrainingRun` (``start``, ``finish``, ``fail``, ``stop_cancelled``, ``cancel``).

A run is a job (webapp.jobs): a worker killed with SIGKILL (or by the OOM killer, or by the hard time limit) stops
beating, and the one job sweep (webapp.jobs.sweep) marks its run ``failed`` with "worker lost".
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from functools import partial
from typing import Any

from django.db import transaction
from django.urls import reverse

from linker.methods.word_vector_params import OWN_VECTOR_PARAMS
from webapp.audit import actions
from webapp.audit.events import record
from webapp.core.queue import QueueUnavailable, enqueue, job_task_id
from webapp.corpus.models import Collection
from webapp.linking.models import EncoderModel
from webapp.training.base_encoders import check_base_encoder
from webapp.training.errors import RunError
from webapp.training.held_out import check_held_out, run_training_data
from webapp.training.hierarchy_inputs import check_has_hierarchy
from webapp.training.job_caps import check_training_run_cap
from webapp.training.latte import base_index
from webapp.training.models import TrainingRun, WordVectorModel
from webapp.training.params import clean_params, params_method
from webapp.training.word_vectors import check_word_vectors
from webapp.vocab.models import Dictionary

logger = logging.getLogger(__name__)

__all__ = ["RunError", "start_run", "cancel_run"]


@transaction.atomic
def start_run(
    dictionary: Dictionary,
    collections: Iterable[Collection] = (),
    params: dict[str, Any] | None = None,
    base_model: str = "",
    eval_collection: Collection | None = None,
    user: Any = None,
    method: str | None = None,
    queue: str | None = None,
    send: bool = True,
    base_encoder: EncoderModel | None = None,
    extra_dictionaries: Iterable[Dictionary] = (),
    word_vectors: WordVectorModel | None = None,
) -> TrainingRun:
    """Create a queued run and send its task once the row is committed (``queue``: override the gpu queue;
    ``send=False``: the caller runs it in its own process with :func:`webapp.training.execution.run_training`).

    The method is ``method`` or ``params["method"]`` (biosyn when neither names one). A LATTE run fixes the
    index it re-ranks over now: the dictionary's active one unless ``params["base_index"]`` names another.
    A HiPrBERT run trains on ``dictionary`` and ``extra_dictionaries`` (each must have a hierarchy); its
    collections are optional (their gold mentions become extra names). ``base_encoder`` (a HiPrBERT one)
    sets ``base_model`` to its folder. A fastText run trains on the documents of any collections (optional:
    the dictionary's names and definitions may be text enough); BNE and DAN runs start from ``word_vectors``
    or, without them, train fastText on their texts first, and a DAN run at ``level`` >= 1 needs a
    dictionary with a hierarchy (``params["hierarchy"]``, else its own). ``eval_collection`` must be held out of
    the training data (:func:`webapp.training.held_out.check_held_out`)."""
    method = params_method(params, method)
    if method not in TrainingRun.Method.values:
        raise RunError(f"unknown training method {method!r}")
    if dictionary.latest_version() is None:
        raise RunError(f"dictionary {dictionary.slug!r} has no imported release")
    collections = list(collections)
    if not collections and method not in (TrainingRun.Method.HIPRBERT, TrainingRun.Method.FASTTEXT):
        raise RunError("choose at least one gold collection as training data")
    cleaned = clean_params(params, method)
    if method in (TrainingRun.Method.FASTTEXT, *TrainingRun.WORD_VECTOR_ENCODERS):
        _check_word_vector_run(method, dictionary, cleaned, base_model, base_encoder, eval_collection, word_vectors)
    elif word_vectors is not None:
        raise RunError("only BNE and DAN runs start from word vectors")
    base_model = _base_model(method, base_model, base_encoder)
    extra = list(extra_dictionaries)
    latte_base = None
    if method == TrainingRun.Method.LATTE:
        latte_base = base_index(dictionary, int(cleaned["base_index"]))
        cleaned["base_index"] = latte_base.pk
    if method == TrainingRun.Method.HIPRBERT:
        if eval_collection is not None:
            raise RunError("hierarchy pre-training is scored on held-out concepts (holdout_share), not on a gold "
                           "collection: leave eval_collection out")
        cleaned["dictionaries"] = _hierarchy_dictionaries(dictionary, extra, cleaned["dictionaries"])
    elif extra:
        raise RunError("only hierarchy pre-training trains on several dictionaries")
    check_held_out(eval_collection, run_training_data(collections, base_model, latte_base))
    check_training_run_cap(user)
    run = TrainingRun.objects.create(
        dictionary=dictionary, method=method, base_model=base_model, params=cleaned,
        eval_collection=eval_collection, created_by=user if getattr(user, "pk", None) else None,
        word_vectors=word_vectors,
    )
    run.collections.set(collections)
    TrainingRun.objects.filter(pk=run.pk).update(snapshot_at=run.created_at)
    run.snapshot_at = run.created_at
    record(actions.RUN_STARTED, actor=user, obj=run, label=f"run {run.pk} ({method}) on {dictionary.slug}",
           after={"method": method, "dictionary": dictionary.slug, "collections": [c.slug for c in collections],
                  "eval_collection": eval_collection.slug if eval_collection is not None else None},
           link=reverse("training:detail", args=[run.pk]))
    if send:
        enqueue("tasks.training.train_task", run.pk, queue=queue, task_id=job_task_id(run),
                on_sent=partial(_sent, run.pk), on_failure=partial(_unqueued, run.pk))
    return run


def _base_model(method: str, base_model: str, base_encoder: EncoderModel | None) -> str:
    """The folder a run starts from: the chosen base encoder's, else ``base_model`` as given."""
    if base_encoder is None:
        return base_model
    if method == TrainingRun.Method.LATTE:
        raise RunError("LATTE re-ranks over an index version: it takes no base encoder")
    if base_model and base_model != base_encoder.artifact_path:
        raise RunError("choose a base encoder or a base model folder, not both")
    check_base_encoder(base_encoder)
    return base_encoder.artifact_path


def _check_word_vector_run(
    method: str, dictionary: Dictionary, params: dict[str, Any], base_model: str, base_encoder: EncoderModel | None,
    eval_collection: Collection | None, word_vectors: WordVectorModel | None,
) -> None:
    """What a fastText, BNE or DAN run cannot take, and DAN's hierarchy at a level >= 1."""
    label = {"fasttext": "fastText", "bne": "BNE", "dan": "DAN"}[method]
    if base_model or base_encoder is not None:
        raise RunError(f"{label} runs on word vectors: it takes no base encoder or base model")
    if method == TrainingRun.Method.FASTTEXT:
        if eval_collection is not None:
            raise RunError("fastText makes word vectors, not a linker: there is nothing to evaluate on a gold collection")
        if word_vectors is not None:
            raise RunError("fastText trains word vectors: it does not start from any")
        return
    if word_vectors is not None:
        check_word_vectors(word_vectors)
        for key in OWN_VECTOR_PARAMS:  # the run trains no fastText: its settings would only mislead
            params.pop(key, None)
    if method == TrainingRun.Method.DAN and int(params.get("level") or 0) >= 1:
        chosen = dictionary
        if params.get("hierarchy"):
            found = Dictionary.objects.filter(pk=params["hierarchy"]).first()
            if found is None:
                raise RunError(f"no dictionary with id {params['hierarchy']}")
            chosen = found
        check_has_hierarchy(chosen)
        params["hierarchy"] = chosen.pk


def _hierarchy_dictionaries(dictionary: Dictionary, extra: list[Dictionary], ids: list[int]) -> list[int]:
    """The ids of every dictionary a HiPrBERT run trains on (the run's own first, each once), each checked
    to have a hierarchy; ``ids`` are those its params named already."""
    chosen = {dictionary.pk: dictionary} | {d.pk: d for d in extra}
    named = Dictionary.objects.in_bulk([i for i in ids if i not in chosen])
    missing = [i for i in ids if i not in chosen and i not in named]
    if missing:
        raise RunError(f"no dictionary with id {missing[0]}")
    chosen |= named
    for d in chosen.values():
        check_has_hierarchy(d)
    return list(chosen)


def _sent(run_id: int, task_id: str) -> None:
    TrainingRun.objects.filter(pk=run_id, task_id="").update(task_id=task_id)


def _unqueued(run_id: int, exc: QueueUnavailable) -> None:
    run = TrainingRun.objects.filter(pk=run_id, state=TrainingRun.State.QUEUED).first()
    if run is not None:
        run.fail(str(exc))


def cancel_run(run_id: int, user: Any = None) -> TrainingRun:
    """A queued run is cancelled at once (its task revoked); a running one stops at its next progress report.
    ``user``: who asked (the audit log's actor; an ended run or one asked already records nothing)."""
    with transaction.atomic():
        run = TrainingRun.objects.get(pk=run_id)
        before = {"state": run.state, "cancel_requested": run.cancel_requested}
        revoke = run.cancel()
        after = {"state": run.state, "cancel_requested": run.cancel_requested}
        if after != before:
            record(actions.RUN_CANCELLED, actor=user, obj=run, label=f"run {run.pk} ({run.method})", before=before,
                   after=after, link=reverse("training:detail", args=[run.pk]))
    if revoke and run.task_id:
        from webapp.celery import app

        try:  # best effort: the task finds the run cancelled and does nothing anyway
            app.control.revoke(run.task_id)
        except Exception:
            logger.warning("training run %s: could not revoke task %s", run.pk, run.task_id, exc_info=True)
    return run
