"""Training runs: queue, run (on a worker), cancel, and recover runs whose worker died.

A run's life: :func:`start_run` creates the row ``queued`` and queues ``tasks.training.train_task`` after
commit; the task calls :func:`run_training`, which moves it to ``running`` exactly once (row lock), records
the training snapshot (webapp.training.dataset: gold links of the chosen collections and curator decisions made
up to ``snapshot_at``, the time the run was requested), trains BioSyn with the ``linker``
package, and on success creates an :class:`EncoderModel` and a ``ready`` :class:`IndexVersion` in one
transaction. Any exception ends the run ``failed`` with the reason; a cancel request ends it ``cancelled``.

While it runs, a heartbeat thread refreshes ``heartbeat_at``. A worker killed with SIGKILL (or by the OOM
killer, or by the hard time limit) stops beating; :func:`recover_stale_runs` then marks the run ``failed``
with "worker lost". It is called when a worker starts, periodically by every worker, when a run starts,
and by the admin pages, so a run never stays ``running`` without a live worker.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterable
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.utils import timezone

from linker.dictionary import NameTable
from linker.train import SCOPE_DEFAULTS, SCOPES, BioSynConfig, SynonymPretrainConfig, resolve_scope
from webapp.corpus.models import Collection
from webapp.core.queue import QueueUnavailable, enqueue
from webapp.training.dataset import build_snapshot, dictionary_table
from webapp.training.errors import RunCancelled, RunError
from webapp.training.evaluation import evaluate_linker
from webapp.training.models import EncoderModel, IndexVersion, TrainingExample, TrainingRun
from webapp.vocab.models import Dictionary

logger = logging.getLogger(__name__)

HEARTBEAT_EVERY_S = 5.0
STALE_AFTER = timedelta(seconds=120)
PROGRESS_EVERY_S = 1.0
LOG_TAIL_LINES = 40
MAX_LOSS_POINTS = 600

# Run-level options kept in ``params`` next to the BioSyn hyperparameters.
RUN_OPTIONS: dict[str, Any] = {
    "train_scope": "auto",  # auto: "full" (the paper) on a GPU, "student" (3-layer student) on a CPU
    "skip_pretrain": False,  # SapBERT-style synonym pre-training over the dictionary first
    "pretrain_epochs": 0,  # 0: the scope's default (linker.train.SCOPE_DEFAULTS)
    "pretrain_max_pairs": 0,  # 0: the scope's default
    "max_queries": 0,  # train on the first N queries only (0: all); smoke runs
    "prior_weight": 1e-3,
    "device": "",  # empty: cuda if the worker has one, else cpu
    "step_delay_s": 0.0,  # sleep in every progress report: lets tests kill a worker mid-run; keep 0
}
_NOT_PARAMS = {"feature_cache", "progress_bar", "train_scope"}


# Zero means "the scope's default" (linker.train.SCOPE_DEFAULTS): the paper's 10 epochs at 1e-5 for a GPU's
# full fine-tuning, one epoch at 2e-5 for the CPU student. The worker resolves them once it knows its device.
SCOPE_DEPENDENT = ("epochs", "lr", "pretrain_epochs", "pretrain_max_pairs")


def default_params() -> dict[str, Any]:
    """The BioSyn paper's hyperparameters (:class:`linker.train.BioSynConfig`) and the run options; the
    scope-dependent ones (:data:`SCOPE_DEPENDENT`) are 0, i.e. the scope's default."""
    biosyn = {k: v for k, v in dataclasses.asdict(BioSynConfig()).items() if k not in _NOT_PARAMS}
    return biosyn | RUN_OPTIONS | {"epochs": 0, "lr": 0.0}


def resolved_params(params: dict[str, Any], scope: str) -> dict[str, Any]:
    """``params`` with the scope-dependent zeros replaced by the scope's defaults."""
    scoped = dataclasses.asdict(SCOPE_DEFAULTS[scope])  # its field names are the params' names
    return params | {k: scoped[k] for k in SCOPE_DEPENDENT if not params.get(k)}


def clean_params(params: dict[str, Any] | None) -> dict[str, Any]:
    """Defaults overlaid with ``params``; unknown names and values of the wrong type are refused."""
    out = default_params()
    for key, value in (params or {}).items():
        if key not in out:
            raise RunError(f"unknown training parameter {key!r}")
        default = out[key]
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise RunError(f"{key} must be true or false")
        elif isinstance(default, (int, float)) and not isinstance(default, bool):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise RunError(f"{key} must be a number")
            if isinstance(default, int) and isinstance(value, float) and not value.is_integer():
                raise RunError(f"{key} must be a whole number")
            value = type(default)(value)
            if value < 0:
                raise RunError(f"{key} must not be negative")
        elif isinstance(default, str) and not isinstance(value, str):
            raise RunError(f"{key} must be a string")
        out[key] = value
    if out["train_scope"] != "auto" and out["train_scope"] not in SCOPES:
        raise RunError(f"train_scope must be auto or one of {', '.join(SCOPES)}")
    return out


# --- queueing, cancelling ------------------------------------------------------------------------------


@transaction.atomic
def start_run(
    dictionary: Dictionary,
    collections: Iterable[Collection] = (),
    params: dict[str, Any] | None = None,
    base_model: str = "",
    eval_collection: Collection | None = None,
    user: Any = None,
    method: str = TrainingRun.Method.BIOSYN,
    queue: str | None = None,
    send: bool = True,
) -> TrainingRun:
    """Create a queued run and send its task once the row is committed (``queue``: override the gpu queue;
    ``send=False``: the caller runs it in its own process with :func:`run_training`)."""
    if method not in TrainingRun.Method.values:
        raise RunError(f"unknown training method {method!r}")
    if dictionary.latest_version() is None:
        raise RunError(f"dictionary {dictionary.slug!r} has no imported release")
    collections = list(collections)
    if not collections:
        raise RunError("choose at least one gold collection as training data")
    run = TrainingRun.objects.create(
        dictionary=dictionary, method=method, base_model=base_model, params=clean_params(params),
        eval_collection=eval_collection, created_by=user if getattr(user, "pk", None) else None,
    )
    run.collections.set(collections)
    TrainingRun.objects.filter(pk=run.pk).update(snapshot_at=run.queued_at)
    run.snapshot_at = run.queued_at
    if send:
        enqueue("tasks.training.train_task", run.pk, queue=queue,
                on_sent=partial(_sent, run.pk), on_failure=partial(_unqueued, run.pk))
    return run


def _sent(run_id: int, task_id: str) -> None:
    TrainingRun.objects.filter(pk=run_id, task_id="").update(task_id=task_id)


def _unqueued(run_id: int, exc: QueueUnavailable) -> None:
    TrainingRun.objects.filter(pk=run_id, state=TrainingRun.State.QUEUED).update(
        state=TrainingRun.State.FAILED, error=str(exc), finished_at=timezone.now()
    )


@transaction.atomic
def cancel_run(run_id: int) -> TrainingRun:
    """A queued run is cancelled at once; a running one stops at its next progress report."""
    run = TrainingRun.objects.select_for_update().get(pk=run_id)
    if run.state == TrainingRun.State.QUEUED:
        run.state = TrainingRun.State.CANCELLED
        run.finished_at = timezone.now()
        run.error = "cancelled before it started"
        run.cancel_requested = True
        run.save(update_fields=["state", "finished_at", "error", "cancel_requested"])
        if run.task_id:
            from webapp.celery import app

            try:  # best effort: the task finds the run cancelled and does nothing anyway
                app.control.revoke(run.task_id)
            except Exception:
                logger.warning("training run %s: could not revoke task %s", run.pk, run.task_id, exc_info=True)
    elif run.state == TrainingRun.State.RUNNING:
        run.cancel_requested = True
        run.save(update_fields=["cancel_requested"])
    return run


def recover_stale_runs(stale_after: timedelta = STALE_AFTER) -> list[int]:
    """Mark ``running`` runs without a heartbeat for ``stale_after`` as failed; returns their ids."""
    cutoff = timezone.now() - stale_after
    recovered = []
    with transaction.atomic():
        stale = TrainingRun.objects.select_for_update(skip_locked=True).filter(
            state=TrainingRun.State.RUNNING, heartbeat_at__lt=cutoff
        )
        for run in stale:
            seen = run.heartbeat_at.isoformat(timespec="seconds") if run.heartbeat_at else "never"
            run.state = TrainingRun.State.FAILED
            run.finished_at = timezone.now()
            run.error = (
                f"worker lost (killed or crashed) at {run.phase or 'start'} step {run.step}/{run.total_steps}, "
                f"epoch {run.epoch}/{run.epochs}, on {run.worker or 'an unknown host'}; last heartbeat {seen}"
            )
            run.log_tail = _tail(run.log_tail, run.error)
            run.save(update_fields=["state", "finished_at", "error", "log_tail"])
            recovered.append(run.pk)
    for pk in recovered:
        logger.warning("training run %s: worker lost, marked failed", pk)
    return recovered


# --- the task body -------------------------------------------------------------------------------------


def run_training(run_id: int, task_id: str = "") -> str:
    """Run a queued run to its end; a re-delivered or duplicate task finds it started and does nothing."""
    recover_stale_runs()
    device = _device(TrainingRun.objects.values_list("params", flat=True).get(pk=run_id).get("device", ""))
    with transaction.atomic():
        run = TrainingRun.objects.select_for_update().get(pk=run_id)
        if run.state != TrainingRun.State.QUEUED:
            return run.state
        now = timezone.now()
        run.state = TrainingRun.State.RUNNING
        run.started_at = now
        run.heartbeat_at = now
        run.worker = socket.gethostname()
        run.device = device
        run.task_id = task_id or run.task_id
        run.phase = "snapshot"
        run.save(update_fields=["state", "started_at", "heartbeat_at", "worker", "device", "task_id", "phase"])
    reporter = _Reporter(run)
    heartbeat = _Heartbeat(run.pk, reporter.cancel)
    heartbeat.start()
    try:
        table = dictionary_table(run)
        examples = build_snapshot(run, table)
        reporter.log(f"snapshot: {len(examples)} examples")
        folder, report = _train(run, table, examples, reporter)
        reporter.flush()
        return _finish(run, folder, report)
    except RunCancelled:
        _end(run.pk, TrainingRun.State.CANCELLED, "cancelled by an admin", reporter)
        return TrainingRun.State.CANCELLED
    except Exception as exc:
        from celery.exceptions import SoftTimeLimitExceeded

        reason = "time limit exceeded" if isinstance(exc, SoftTimeLimitExceeded) else f"{type(exc).__name__}: {exc}"
        logger.exception("training run %s failed", run.pk)
        _end(run.pk, TrainingRun.State.FAILED, reason, reporter)
        return TrainingRun.State.FAILED
    finally:
        heartbeat.stop()


def _device(prefer: str) -> str:
    from linker.train import choose_device

    return str(choose_device(prefer or None))


def _end(run_id: int, state: str, reason: str, reporter: _Reporter) -> None:
    reporter.log(reason)
    TrainingRun.objects.filter(pk=run_id, state=TrainingRun.State.RUNNING).update(
        state=state, error=reason, finished_at=timezone.now(), log_tail=reporter.tail
    )


# --- training -----------------------------------------------------------------------------------------


def model_folder(run: TrainingRun) -> Path:
    return Path(settings.ARTIFACT_ROOT) / "models" / str(run.pk)


def _train(
    run: TrainingRun, table: NameTable, examples: list[TrainingExample], reporter: _Reporter
) -> tuple[Path, dict[str, Any]]:
    """BioSyn over the snapshot, the way ``python -m linker train`` does it, with the run's callbacks."""
    import torch

    from linker.biosyn import make_training_queries, train_biosyn
    from linker.encoders.transformer import TransformerEncoder
    from linker.linker import Linker, LinkerConfig
    from linker.pretrain import pretrain_synonyms
    from linker.retrieval import RetrievalConfig
    from linker.sparse import SparseEncoder

    scope = resolve_scope(run.params.get("train_scope", "auto"), run.device or None)
    params = resolved_params(run.params, scope)
    cache = str(Path(settings.ARTIFACT_ROOT) / "cache" / "features")
    fields = {f.name for f in dataclasses.fields(BioSynConfig)}
    biosyn = BioSynConfig(**{k: v for k, v in params.items() if k in fields and k not in _NOT_PARAMS},
                          train_scope=scope, feature_cache=cache if scope == "head" else None, progress_bar=False)
    pretrain = SynonymPretrainConfig(epochs=int(params["pretrain_epochs"]), max_pairs=int(params["pretrain_max_pairs"]),
                                     train_scope=scope, num_threads=biosyn.num_threads, feature_cache=biosyn.feature_cache,
                                     progress_bar=False)
    torch.set_num_threads(max(1, biosyn.num_threads))
    pairs = [(ex.text, ex.concept_id) for ex in examples if not ex.negative]
    encoder = TransformerEncoder(run.base_model or None, max_length=biosyn.max_length, layers=SCOPE_DEFAULTS[scope].layers)
    report: dict[str, Any] = {"training_pairs": len(pairs), "train_scope": scope, "device": run.device,
                              "encoder_layers": encoder.num_layers, "epochs": biosyn.epochs, "lr": biosyn.lr}
    t0 = time.perf_counter()
    if not params.get("skip_pretrain"):
        reporter.phase("synonym-pretrain")
        report["pretrain"] = pretrain_synonyms(encoder, table, pretrain, on_step=reporter.progress,
                                               on_epoch_end=reporter.epoch_end, device=run.device)
    reporter.phase("biosyn")
    sparse = SparseEncoder().fit(table.names)
    queries = make_training_queries(pairs, table, dedupe=biosyn.dedupe_queries)
    if params.get("max_queries"):
        queries = queries[: int(params["max_queries"])]
    if not queries:
        raise RunError("no training query resolves to a concept of the dictionary's latest release")
    report["training_queries"] = len(queries)
    folder = model_folder(run)
    partial_folder = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial_folder, ignore_errors=True)
    model, history = train_biosyn(encoder, table, sparse, queries, biosyn, checkpoint_dir=partial_folder / "checkpoints",
                                  on_step=reporter.progress, on_epoch_end=reporter.epoch_end, device=run.device)
    report["biosyn"] = history
    report["train_total_s"] = time.perf_counter() - t0
    sparse_weight = float(model.sparse_weight.detach())
    report["sparse_weight"] = sparse_weight
    reporter.phase("index", reset=False)
    merged = table.add(pairs)
    linker = Linker.build(
        table, encoder,
        LinkerConfig(retrieval=RetrievalConfig(sparse_weight=sparse_weight, dense_scale=biosyn.dense_scale,
                                               prior_weight=float(params.get("prior_weight", 1e-3)))),
        metadata={"training_run": run.pk, "merged_train_names": len(merged)},
        feature_cache=biosyn.feature_cache,
    )
    counts = Counter(p for p in (table.resolve_id(cid) for _, cid in pairs) if p)
    linker.set_concept_prior(dict(counts))
    linker.save(partial_folder)
    shutil.rmtree(partial_folder / "checkpoints", ignore_errors=True)
    if run.eval_collection_id:
        reporter.phase("evaluate", reset=False)
        report["metrics"] = evaluate_linker(linker, run.eval_collection_id)
    (partial_folder / "training_report.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    shutil.rmtree(folder, ignore_errors=True)
    partial_folder.rename(folder)  # the folder appears complete or not at all
    return folder, report


@transaction.atomic
def _finish(run: TrainingRun, folder: Path, report: dict[str, Any]) -> str:
    """Record the encoder and its ready index, unless the run was failed or cancelled meanwhile."""
    locked = TrainingRun.objects.select_for_update().get(pk=run.pk)
    if locked.state != TrainingRun.State.RUNNING:
        return locked.state
    if locked.cancel_requested:
        raise RunCancelled
    version = locked.dictionary.latest_version()
    assert version is not None  # checked when the table was built
    config = {k: v for k, v in report.items() if k not in ("pretrain", "biosyn", "metrics")} | {"params": locked.params}
    encoder = EncoderModel.objects.create(
        name=f"biosyn-run-{locked.pk}", method=EncoderModel.Method.BIOSYN,
        base_model=locked.base_model or _default_base(), config=config, artifact_path=str(folder),
        created_by=locked.created_by,
    )
    payload = json.loads((folder / "config.json").read_text())
    index = IndexVersion.objects.create(
        dictionary=locked.dictionary, dictionary_version=version, encoder=encoder, artifact_path=str(folder),
        state=IndexVersion.State.READY, name_count=int(payload.get("names", 0)),
        concept_count=int(payload.get("concepts", 0)), created_by=locked.created_by,
    )
    locked.state = TrainingRun.State.SUCCEEDED
    locked.finished_at = timezone.now()
    locked.encoder = encoder
    locked.index_version = index
    locked.metrics = report.get("metrics", {})
    locked.fraction = 1.0
    locked.phase = "done"
    locked.log_tail = _tail(locked.log_tail, f"succeeded: encoder {encoder.name}, index {index.pk}")
    locked.save()
    return locked.state


def _default_base() -> str:
    from linker.encoders.transformer import default_base_model

    return str(default_base_model())


# --- progress, heartbeat ----------------------------------------------------------------------------------


def _tail(log: str, line: str) -> str:
    lines = (log.splitlines() if log else []) + [f"{timezone.now():%H:%M:%S} {line}"]
    return "\n".join(lines[-LOG_TAIL_LINES:])


class _Reporter:
    """Linker progress callbacks -> the run row, at most once a second; raises RunCancelled when asked to stop."""

    def __init__(self, run: TrainingRun) -> None:
        self.run_id = run.pk
        self.delay = float(run.params.get("step_delay_s", 0.0))
        self.cancel = threading.Event()
        self.tail = run.log_tail
        self.losses: list[dict[str, Any]] = list(run.loss_history or [])
        self.fields: dict[str, Any] = {}
        self.last = 0.0
        self.current_phase = ""

    def log(self, line: str) -> None:
        self.tail = _tail(self.tail, line)
        self.fields["log_tail"] = self.tail

    def phase(self, name: str, reset: bool = True) -> None:
        """A new phase; training phases restart the progress, the last ones keep the training's figures."""
        self.current_phase = name
        self.fields["phase"] = name
        if reset:
            self.fields.update(fraction=0.0, step=0, total_steps=0, epoch=0)
        self.log(f"phase {name}")
        self.flush()

    def progress(self, p: dict[str, Any]) -> None:
        step, total = int(p.get("step", 0)), int(p.get("total_steps", 0))
        self.fields.update(
            phase=str(p.get("phase", self.current_phase)), epoch=int(p.get("epoch", 0)), epochs=int(p.get("epochs", 0)),
            step=step, total_steps=total, fraction=min(1.0, step / total) if total else 0.0,
        )
        if "loss" in p:
            self.losses.append({"phase": self.fields["phase"], "step": step, "loss": round(float(p["loss"]), 6)})
            if len(self.losses) > MAX_LOSS_POINTS:
                self.losses = self.losses[::2]
            self.fields["loss_history"] = self.losses
        if self.delay:
            time.sleep(self.delay)
        if time.monotonic() - self.last >= PROGRESS_EVERY_S:
            self.flush()
        if self.cancel.is_set():
            raise RunCancelled

    def epoch_end(self, p: dict[str, Any]) -> None:
        self.log(f"{p.get('phase')} epoch {p.get('epoch')}/{p.get('epochs')}: loss {float(p.get('loss', 0.0)):.4f}, "
                 f"{float(p.get('mentions_per_s', 0.0)):.0f}/s")
        self.progress({k: v for k, v in p.items() if k != "loss"})
        self.flush()

    def flush(self) -> None:
        self.last = time.monotonic()
        if self.fields:
            self.fields["heartbeat_at"] = timezone.now()
            TrainingRun.objects.filter(pk=self.run_id, state=TrainingRun.State.RUNNING).update(**self.fields)
            self.fields = {}
        if TrainingRun.objects.filter(pk=self.run_id, cancel_requested=True).exists():
            self.cancel.set()


class _Heartbeat(threading.Thread):
    """Refreshes ``heartbeat_at`` while the run's process is alive, even in phases without progress reports."""

    def __init__(self, run_id: int, cancel: threading.Event, every: float = HEARTBEAT_EVERY_S) -> None:
        super().__init__(name=f"training-run-{run_id}-heartbeat", daemon=True)
        self.run_id = run_id
        self.cancel = cancel
        self.every = every
        self.stopped = threading.Event()

    def run(self) -> None:
        try:
            while not self.stopped.wait(self.every):
                TrainingRun.objects.filter(pk=self.run_id, state=TrainingRun.State.RUNNING).update(heartbeat_at=timezone.now())
                if TrainingRun.objects.filter(pk=self.run_id, cancel_requested=True).exists():
                    self.cancel.set()
        except Exception:  # a database outage: the sweep will see a stale heartbeat and fail the run
            logger.exception("training run %s: heartbeat stopped", self.run_id)
        finally:
            connection.close()

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=self.every + 5)


class StaleRunSweeper(threading.Thread):
    """Runs :func:`recover_stale_runs` every ``every`` seconds in a worker's main process."""

    def __init__(self, every: float = 60.0) -> None:
        super().__init__(name="training-stale-run-sweeper", daemon=True)
        self.every = every
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(self.every):
            try:
                close_old_connections()
                recover_stale_runs()
            except Exception:
                logger.exception("stale training run sweep failed")
            finally:
                connection.close()
