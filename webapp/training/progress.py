"""A running run's live record: the recipe's progress callbacks -> the run row, and the heartbeat thread.

Both also watch ``cancel_requested``: the reporter raises :class:`RunCancelled` from the next progress
report, which unwinds the training in the worker.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models.functions import Now

from webapp.training.errors import RunCancelled
from webapp.training.index_progress import LINKER_PHASES, duration, progress_line
from webapp.training.models import TrainingRun, append_log

logger = logging.getLogger(__name__)

HEARTBEAT_EVERY_S = float(settings.JOB_HEARTBEAT_EVERY_S)  # 5 s
PROGRESS_EVERY_S = 1.0
MAX_LOSS_POINTS = 600
# Phases after the training keep its figures (epoch, step, loss) on the page instead of restarting them.
KEEPS_PROGRESS = ("index", "latent-types", "evaluate", "save")


class Reporter:
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
        self.phase_started = time.monotonic()
        self.index_step = ("", 0.0)  # the index build's step (encoding names ...) and when it started

    def log(self, line: str) -> None:
        self.tail = append_log(self.tail, line)
        self.fields["log_tail"] = self.tail

    def phase(self, name: str) -> None:
        """A new phase; training phases restart the progress, the last ones keep the training's figures."""
        self.current_phase = name
        self.phase_started = time.monotonic()
        self.fields["phase"] = name
        if name not in KEEPS_PROGRESS:
            self.fields.update(fraction=0.0, step=0, total_steps=0, epoch=0)
        self.log(f"phase {name}")
        self.flush()

    def progress(self, p: dict[str, Any]) -> None:
        step, total = int(p.get("step", 0)), int(p.get("total_steps", 0))
        epoch, epochs = int(p.get("epoch", 0)), int(p.get("epochs", 0))
        # Without steps (fastText reports epochs only) the share of epochs done is the progress.
        fraction = step / total if total else (epoch / epochs if epochs else 0.0)
        self.fields.update(
            phase=str(p.get("phase", self.current_phase)), epoch=epoch, epochs=epochs,
            step=step, total_steps=total, fraction=min(1.0, fraction),
        )
        # The job's own progress, as every kind of job shows it (the jobs page, /api/jobs/).
        note = f"{self.fields['phase']} epoch {epoch}/{epochs}" if epochs else self.fields["phase"]
        elapsed = time.monotonic() - self.phase_started
        if 0 < fraction < 1 and elapsed > 0:
            # The phase's time left at its pace so far (the run's page adds it up with the phases still to come).
            note += f", about {duration(elapsed * (1 - fraction) / fraction)} left"
        self.fields.update(progress=step, progress_total=total or None, progress_note=note)
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

    def index(self, step: str, done: int, total: int) -> None:
        """The index build's progress as Linker.build reports it: the note says what the Models page's build card
        says (names done of all, names per second, time left), the bar shows the share of names done."""
        if step != self.index_step[0]:
            self.index_step = (step, time.monotonic())
        label = str(LINKER_PHASES[step].label).lower() if step in LINKER_PHASES else step
        fraction = done / total if total else 0.0
        self.fields.update(fraction=min(1.0, fraction), progress=done, progress_total=total or None,
                           progress_note=progress_line(label, done, total, time.monotonic() - self.index_step[1])
                           if total else label)
        if time.monotonic() - self.last >= PROGRESS_EVERY_S or done >= total:
            self.flush()
        if self.cancel.is_set():
            raise RunCancelled

    def epoch_end(self, p: dict[str, Any]) -> None:
        # Each method reports what it measures: a loss, a speed, a dev score, the time so far.
        said = [f"loss {float(p['loss']):.4f}" if "loss" in p else "",
                f"{float(p['mentions_per_s']):.0f}/s" if "mentions_per_s" in p else "",
                f"dev Acc@1 {float(p['dev_acc']):.4f}" if p.get("dev_acc") is not None else "",
                f"{float(p['elapsed_s']):.1f} s" if "elapsed_s" in p else ""]
        self.log(f"{p.get('phase')} epoch {p.get('epoch')}/{p.get('epochs')}: " + ", ".join(s for s in said if s))
        self.progress({k: v for k, v in p.items() if k != "loss"})
        self.flush()

    def flush(self) -> None:
        self.last = time.monotonic()
        if self.fields:
            self.fields["heartbeat_at"] = Now()
            TrainingRun.objects.filter(pk=self.run_id, state=TrainingRun.State.RUNNING).update(**self.fields)
            self.fields = {}
        if TrainingRun.objects.filter(pk=self.run_id, cancel_requested=True).exists():
            self.cancel.set()


class Heartbeat(threading.Thread):
    """Refreshes ``heartbeat_at`` while the run's process is alive, even in phases without progress reports."""

    def __init__(self, run_id: int, cancel: threading.Event, every: float = HEARTBEAT_EVERY_S) -> None:
        super().__init__(name=f"training-run-{run_id}-heartbeat", daemon=True)
        self.run_id = run_id
        self.cancel = cancel
        self.every = every
        self.stopped = threading.Event()

    def run(self) -> None:
        failing = False
        try:
            while not self.stopped.wait(self.every):
                try:
                    self.beat()
                except Exception:
                    # A database blip: beat again next time (a fresh connection). The sweep fails the run only
                    # after STALE_AFTER without a beat, and waits that long after an outage of its own.
                    if not failing:
                        logger.exception("training run %s: heartbeat failed; trying again every %.0f s", self.run_id, self.every)
                    failing = True
                    _close_quietly()
                else:
                    if failing:
                        logger.info("training run %s: heartbeat written again", self.run_id)
                    failing = False
        finally:
            _close_quietly()

    def beat(self) -> None:
        TrainingRun.objects.filter(pk=self.run_id, state=TrainingRun.State.RUNNING).update(heartbeat_at=Now())
        if TrainingRun.objects.filter(pk=self.run_id, cancel_requested=True).exists():
            self.cancel.set()

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=self.every + 5)


def _close_quietly() -> None:
    try:
        connection.close()
    except Exception:  # a connection the outage broke
        logger.debug("closing the heartbeat's connection failed", exc_info=True)
