"""A training run on a worker: the task body of ``tasks.training.train_task``.

:func:`run_training` starts the run (exactly once: a row lock), records the training snapshot
(:mod:`webapp.training.dataset`), hands it to the linker's recipe (``linker.recipe.train``, the same call as
``python -m linker train``) with callbacks that write progress to the row (:mod:`webapp.training.progress`),
and on success records an :class:`EncoderModel` and a ``ready`` :class:`IndexVersion` in one transaction. A
hierarchy pre-training (HiPrBERT) run has no snapshot (it trains on the dictionaries' names and hierarchies,
:mod:`webapp.training.hierarchy_inputs`) and makes a base encoder, not a linker: no index version. A fastText
run has no snapshot either (it trains on the collections' documents, :mod:`webapp.training.word_vector_inputs`)
and makes a :class:`WordVectorModel`; BNE and DAN runs are recorded as BioSyn's are. A mention-tagger run trains on
documents with their spans (:mod:`webapp.training.tagger_inputs`) and makes a ``ready`` :class:`DetectorVersion`
(:mod:`webapp.training.detectors` activates it), no encoder and no index.
Any exception ends the run ``failed`` with the reason; a cancel request ends it ``cancelled``.
"""

from __future__ import annotations

import json
import logging
import socket
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from linker import recipe
from webapp.artifacts.manifests import publish
from webapp.jobs.sweep import fail_lost_jobs
from webapp.linking.models import DetectorVersion, EncoderModel, IndexVersion
from webapp.training.base_encoders import started_from
from webapp.training.calibration import calibrate_run
from webapp.training.dataset import build_snapshot, dictionary_table, training_inputs
from webapp.training.errors import RunCancelled, RunError
from webapp.training.evaluation import LinkerEvaluation, evaluate_linker_outcomes, record_evaluation
from webapp.training.hierarchy_inputs import hierarchy_inputs
from webapp.training.latte import base_index
from webapp.training.latte_inputs import latte_inputs, latte_table
from webapp.training.models import CANCELLED_BY_ADMIN, TrainingRun
from webapp.training.params import recipe_config
from webapp.training.progress import Heartbeat, Reporter
from webapp.training.tagger_inputs import provenance_line, tagger_inputs
from webapp.training.word_vector_inputs import encoder_inputs, fasttext_inputs
from webapp.training.word_vectors import record_trained

logger = logging.getLogger(__name__)


def run_training(run_id: int, task_id: str = "") -> str:
    """Run a queued run to its end; a re-delivered or duplicate task finds it started and does nothing."""
    fail_lost_jobs()  # what a killed predecessor on this worker left running, before this one takes a run up
    run = TrainingRun.objects.get(pk=run_id)
    if not run.start(worker=socket.gethostname(), device=_device(run.params.get("device", "")), task_id=task_id):
        return run.state
    reporter = Reporter(run)
    heartbeat = Heartbeat(run.pk, reporter.cancel)
    heartbeat.start()
    evaluated: list[LinkerEvaluation] = []  # the run's own evaluation, kept per mention for the comparison page
    try:
        folder, report = _train(run, reporter, evaluated)
        report["calibration"] = calibrate_run(run, folder, reporter.log)
        # Into the artifact store before the rows that name it: a web host elsewhere loads it from there.
        publish(folder)
        reporter.flush()
        return _record(run, folder, report, evaluated[-1] if evaluated else None)
    except RunCancelled:
        reporter.log(CANCELLED_BY_ADMIN)
        run.stop_cancelled(reporter.tail)
        return TrainingRun.State.CANCELLED
    except Exception as exc:
        from celery.exceptions import SoftTimeLimitExceeded

        reason = "time limit exceeded" if isinstance(exc, SoftTimeLimitExceeded) else f"{type(exc).__name__}: {exc}"
        logger.exception("training run %s failed", run.pk)
        reporter.log(reason)
        run.fail(reason, reporter.tail)
        return TrainingRun.State.FAILED
    finally:
        heartbeat.stop()


def _device(prefer: str) -> str:
    from linker.train import choose_device

    return str(choose_device(prefer or None))


def model_folder(run: TrainingRun) -> Path:
    return Path(settings.ARTIFACT_ROOT) / "models" / str(run.pk)


def _inputs(run: TrainingRun, reporter: Reporter) -> recipe.TrainingInputs:
    """The run's snapshot as the recipe's inputs: pairs for BioSyn; for LATTE documents, rejections and known
    types over the base index's linker; for HiPrBERT each dictionary's names and hierarchy."""
    if run.method == TrainingRun.Method.HIPRBERT:
        inputs = hierarchy_inputs(run, model_folder(run))
        reporter.log("sources: " + "; ".join(
            f"{s.name} {len(s.names)} concepts, {s.name_count} names, {s.edge_count} parent links"
            for s in inputs.hierarchies) + f"; corpus names added {dict(inputs.metadata['corpus_names_added'])}")
        return inputs
    if run.method == TrainingRun.Method.LATTE:
        index = base_index(run.dictionary, int(run.params.get("base_index", 0)))
        table = latte_table(index)
        examples = build_snapshot(run, table)
        inputs = latte_inputs(run, index, table, examples, model_folder(run))
        reporter.log(f"snapshot: {len(examples)} examples; {len(inputs.documents)} documents with "
                     f"{sum(len(d.mentions) for d in inputs.documents)} mentions, {len(inputs.rejections)} with "
                     f"rejected concepts; re-ranking index {index.pk}")
        return inputs
    if run.method == TrainingRun.Method.TAGGER:
        inputs = tagger_inputs(run, model_folder(run))
        spans = inputs.metadata["spans"]
        types = inputs.metadata["mention_types"]
        reporter.log(provenance_line(spans) + f"; types {', '.join(types) if types else 'all'}; evaluated on "
                     f"{spans['dev_documents']} documents with {spans['dev_spans']} spans")
        if not any(doc.mentions for doc in inputs.documents):
            raise RunError("no spans to train on: the collections have no mentions of the chosen types and no "
                           "fully reviewed document was curated")
        return inputs
    if run.method == TrainingRun.Method.FASTTEXT:
        inputs = fasttext_inputs(run, model_folder(run))
        reporter.log(f"texts: {inputs.metadata['documents']} documents, {inputs.metadata['definitions']} definitions"
                     f"{', and the dictionary names' if run.params.get('include_names', True) else ''}")
        return inputs
    table = dictionary_table(run)
    examples = build_snapshot(run, table)
    reporter.log(f"snapshot: {len(examples)} examples")
    if run.method in TrainingRun.WORD_VECTOR_ENCODERS:
        inputs, said = encoder_inputs(run, table, examples, model_folder(run))
        start = (f"word vectors {said['word_vectors']}" if "word_vectors" in said else
                 f"fastText trained first on {said['documents']} documents and {said['definitions']} definitions")
        reporter.log(f"{run.method}: {said['pairs']} training pairs; starts from {start}"
                     + (f"; hierarchy {said['hierarchy']}" if "hierarchy" in said else ""))
        return inputs
    return training_inputs(run, table, examples, model_folder(run))


def _train(run: TrainingRun, reporter: Reporter,
           evaluated: list[LinkerEvaluation] | None = None) -> tuple[Path, dict[str, Any]]:
    """The snapshot as the recipe's inputs, the params as its config, the reporter as its callbacks; the evaluation
    of the trained linker is appended to ``evaluated`` with its per-mention outcomes."""
    inputs = _inputs(run, reporter)
    eval_id = run.eval_collection_id

    def evaluate_linker(linker: Any, collection_id: int) -> dict[str, Any]:
        result = evaluate_linker_outcomes(linker, collection_id)
        if evaluated is not None:
            evaluated.append(result)
        return result.metrics

    callbacks = recipe.TrainingCallbacks(
        on_step=reporter.progress, on_epoch_end=reporter.epoch_end, on_phase=reporter.phase, on_log=reporter.log,
        on_index=reporter.index,
        # A tagger scores its own dev documents (span figures) after every epoch: it builds no linker.
        evaluate=(lambda linker: evaluate_linker(linker, eval_id)) if eval_id and run.method != TrainingRun.Method.TAGGER
        else None,
    )
    hierarchy = inputs.hierarchies[0].name if run.method == TrainingRun.Method.DAN and inputs.hierarchies else None
    config = recipe_config(run.params | {"method": run.method}, run.device, hierarchy)
    return recipe.train(run.method, inputs, config, callbacks)


@transaction.atomic
def _record(run: TrainingRun, folder: Path, report: dict[str, Any], evaluated: LinkerEvaluation | None = None) -> str:
    """Record the encoder and its ready index, unless the run was failed or cancelled meanwhile; the run's evaluation
    of that index (``evaluated``) becomes a succeeded Evaluation of it on the run's collection, with its outcomes."""
    locked = TrainingRun.objects.select_for_update().get(pk=run.pk)
    if locked.state != TrainingRun.State.RUNNING:
        return locked.state
    if locked.cancel_requested:
        raise RunCancelled
    if locked.method == TrainingRun.Method.HIPRBERT:
        return _record_base_encoder(locked, folder, report)
    if locked.method == TrainingRun.Method.TAGGER:
        return _record_detector(locked, folder, report)
    if locked.method == TrainingRun.Method.FASTTEXT:
        vectors = record_trained(locked, folder, report)
        metrics = {"name_coverage": vectors.name_coverage} if vectors.name_coverage is not None else {}
        locked.finish(None, None, metrics, made=f"word vectors {vectors.name} ({vectors.words} words of dimension "
                                                f"{vectors.dim}), no index")
        return locked.state
    version, parent, base_model = locked.dictionary.latest_version(), started_from(locked.base_model), locked.base_model or ""
    if locked.method in TrainingRun.WORD_VECTOR_ENCODERS:
        # No transformer: what it started from is its word vectors (kept inside its encoder folder too).
        base_model = locked.word_vectors.artifact_path if locked.word_vectors else "fastText on the run's texts"
    if locked.method == TrainingRun.Method.LATTE:
        # The re-ranker belongs to its base index's dictionary version and encoder.
        base = IndexVersion.objects.select_related("encoder", "dictionary_version").get(pk=locked.params["base_index"])
        version, parent = base.dictionary_version, base.encoder
        base_model = parent.base_model if parent is not None else base_model
    assert version is not None  # checked when the table was built
    config = {k: v for k, v in report.items() if k not in (*recipe.HISTORIES, "history", "latte", "metrics")} | {"params": locked.params}
    encoder = EncoderModel.objects.create(
        name=f"{locked.method}-run-{locked.pk}", method=locked.method, parent=parent,
        base_model=base_model or _default_base(), config=config, artifact_path=str(folder),
        created_by=locked.created_by,
    )
    payload = json.loads((folder / "config.json").read_text())
    index = IndexVersion.objects.create(
        dictionary=locked.dictionary, dictionary_version=version, encoder=encoder, artifact_path=str(folder),
        state=IndexVersion.State.READY, name_count=int(payload.get("names", 0)),
        concept_count=int(payload.get("concepts", 0)), created_by=locked.created_by,
    )
    if evaluated is not None and locked.eval_collection_id is not None:
        record_evaluation(index, locked.eval_collection_id, evaluated, locked.created_by)
    locked.finish(encoder, index, report.get("metrics", {}))
    return locked.state


def _record_base_encoder(locked: TrainingRun, folder: Path, report: dict[str, Any]) -> str:
    """A HiPrBERT run's base encoder: an EncoderModel to start from, no index (it is not a linker)."""
    config = {k: v for k, v in report.items() if k not in recipe.HISTORIES} | {"params": locked.params}
    encoder = EncoderModel.objects.create(
        name=f"{locked.method}-run-{locked.pk}", method=EncoderModel.Method.HIPRBERT,
        parent=started_from(locked.base_model), base_model=locked.base_model or _default_base(), config=config,
        artifact_path=str(folder), created_by=locked.created_by,
    )
    locked.finish(encoder, None, report.get("metrics", {}))
    return locked.state


def _record_detector(locked: TrainingRun, folder: Path, report: dict[str, Any]) -> str:
    """A tagger run's mention detector: a ``ready`` DetectorVersion (an admin activates it), no encoder, no index."""
    metadata = report.get("metadata") or {}
    metrics = {k: v for k, v in (report.get("metrics") or {}).items() if isinstance(v, (int, float))}
    detector = DetectorVersion.objects.create(
        dictionary=locked.dictionary, run=locked, label=f"{locked.method}-run-{locked.pk}", artifact_path=str(folder),
        state=DetectorVersion.State.READY, metrics=metrics,
        mention_types=list(metadata.get("mention_types") or locked.params.get("mention_types") or []),
        training_data=dict(metadata.get("spans") or {}), created_by=locked.created_by,
    )
    locked.finish(None, None, metrics, made=f"detector {detector.label}")
    return locked.state


def _default_base() -> str:
    from linker.encoders.transformer import default_base_model

    return str(default_base_model())
