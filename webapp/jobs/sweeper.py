"""The sweep inside each worker process: a thread that fails the jobs whose worker died, every 5 s
(:func:`webapp.jobs.sweep.fail_lost_jobs`, every kind of job alike).

A job held by a lease is failed on the first sweep after its runner's process died; a job that beats a heartbeat
(a training run: every :data:`webapp.training.progress.HEARTBEAT_EVERY_S`, 5 s) once its heartbeat is
:data:`webapp.jobs.sweep.STALE_AFTER` (20 s) old, so within about 25 s of its last beat. The sweep is keyed on that
age, not on when a worker started: a worker restarted a moment after its predecessor was killed finds the run's
heartbeat still fresh, and fails it on one of its next sweeps.

The thread starts when a Celery worker is ready (:func:`start_in_worker`, connected in ``webapp.jobs.apps``) and
runs in the worker's main process, so a pool busy with a long run, or a broker that is down, does not hold it up;
``python -m webapp.launcher`` runs one too, for the time its worker is restarting or given up on. The beat
schedule's sweep (``tasks.jobs.sweep_jobs``, every minute) stays as the slow path.

After the database was unreachable, the live runs' heartbeats could not be written either: the thread sweeps
again only once the database has answered for ``STALE_AFTER`` (plus one period), so that a run whose worker
outlived the outage is not failed for the outage.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection

from webapp.jobs.sweep import STALE_AFTER

logger = logging.getLogger(__name__)

SWEEP_EVERY_S = float(settings.JOB_SWEEP_EVERY_S)  # 5 s

__all__ = ["SWEEP_EVERY_S", "JobSweeper", "start_sweeper", "stop_sweeper", "start_in_worker", "stop_in_worker"]


def _recover(stale_after: timedelta) -> list[str]:
    from webapp.jobs.sweep import fail_lost_jobs

    return fail_lost_jobs(stale_after)


def _close_connection() -> None:
    """No connection kept between sweeps (nor inherited by a pool child the worker forks meanwhile)."""
    try:
        connection.close()
    except Exception:  # a connection the outage broke: nothing left to close
        logger.debug("closing the sweeper's connection failed", exc_info=True)


def _ping() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


class JobSweeper(threading.Thread):
    """Calls ``fail_lost_jobs(stale_after)`` at once, then every ``every`` seconds, until :meth:`stop`."""

    def __init__(
        self,
        every: float = SWEEP_EVERY_S,
        stale_after: timedelta = STALE_AFTER,
        recover: Callable[[timedelta], list[str]] = _recover,
        ping: Callable[[], None] = _ping,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(name="job-sweeper", daemon=True)
        self.every = every
        self.stale_after = stale_after
        self.recover = recover
        self.ping = ping
        self.clock = clock
        self.stopped = threading.Event()
        self.sweeps = 0  # sweeps done (tests and logs)
        self.quiet_until = 0.0  # after a database outage: no sweep before this (clock), only pings
        self.failing = False

    def run(self) -> None:
        delay = 0.0  # the first sweep at once: a worker that starts fails what its predecessor left
        while not self.stopped.wait(delay):
            delay = self.every
            self.tick()

    def tick(self) -> list[str]:
        """One period: a sweep, or during the quiet time after an outage a ping; what it failed."""
        try:
            if self.clock() < self.quiet_until:
                self.ping()
                return []
            recovered = self.recover(self.stale_after)
            self.sweeps += 1
            if self.failing:
                logger.info("job sweep: the database answers again")
                self.failing = False
            return recovered
        except Exception:
            # Heartbeats could not be written meanwhile either: wait until they have had time to resume.
            self.quiet_until = self.clock() + self.stale_after.total_seconds() + self.every
            if not self.failing:
                logger.exception("job sweep failed; sweeping again once the database has answered "
                                 "for %.0f s", self.stale_after.total_seconds())
            self.failing = True
            return []
        finally:
            _close_connection()

    def stop(self, timeout: float | None = None) -> None:
        self.stopped.set()
        if self.is_alive():
            self.join(timeout=self.every + 5 if timeout is None else timeout)


_sweeper: JobSweeper | None = None
_lock = threading.Lock()


def start_sweeper(**kwargs: Any) -> JobSweeper:
    """This process's sweeper thread, started once (a second call returns the running one)."""
    global _sweeper
    with _lock:
        if _sweeper is None or not _sweeper.is_alive():
            _sweeper = JobSweeper(**kwargs)
            _sweeper.start()
        return _sweeper


def stop_sweeper() -> None:
    global _sweeper
    with _lock:
        sweeper, _sweeper = _sweeper, None
    if sweeper is not None:
        sweeper.stop()


def start_in_worker(**_: Any) -> None:
    """``celery.signals.worker_ready``: start the sweeper in the worker's main process."""
    start_sweeper()
    logger.info("job sweep: every %.0f s; jobs without a lease or a heartbeat for %.0f s are failed",
                SWEEP_EVERY_S, STALE_AFTER.total_seconds())


def stop_in_worker(**_: Any) -> None:
    """``celery.signals.worker_shutdown``."""
    stop_sweeper()
