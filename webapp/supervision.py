"""The run command's supervision (:mod:`webapp.launcher`): the web server and the workers as child processes, a
dead worker restarted after 1 s, then 2, 4 ... up to 30 s while it keeps dying within a minute of starting, and
left stopped after 5 such crashes in a row, while the web server serves on; the web server stopping ends the run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from webapp.embedded import PROJECT_ROOT

__all__ = ["RestartPolicy", "Child", "Supervisor", "supervise"]


@dataclass(frozen=True)
class RestartPolicy:
    """When a dead worker is started again, and when the launcher stops trying.

    A worker that dies within ``fast_crash_s`` of starting crashed fast: the delay before the next start
    doubles from ``first_delay_s`` up to ``max_delay_s``, and after ``give_up_after`` fast crashes in a row it
    is left stopped. One that ran longer is restarted after ``first_delay_s``, its count starting again.
    """

    first_delay_s: float = 1.0
    max_delay_s: float = 30.0
    fast_crash_s: float = 60.0
    give_up_after: int = 5

    def delay(self, fast_crashes: int) -> float:
        return min(self.max_delay_s, self.first_delay_s * 2 ** max(0, fast_crashes - 1))


class Child:
    """One command the launcher runs. ``own_group``: in a process group of its own, so that when it dies, or is
    stopped, what it forked goes too (a Celery worker's pool processes and embedded beat: left behind they
    would keep a killed run's task, or a second beat, alive beside the restarted worker)."""

    def __init__(self, name: str, argv: list[str], log: Path | None = None, own_group: bool = False,
                 cwd: Path = PROJECT_ROOT) -> None:
        self.name, self.argv, self.log, self.own_group, self.cwd = name, argv, log, own_group, cwd
        self.process: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        self.terminating = False

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def start(self, now: float, note: str = "") -> None:
        out: IO[Any] | None = open(self.log, "ab") if self.log is not None else None  # the child keeps its own copy
        try:
            if out is not None and note:
                out.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} launcher: {note} ---\n".encode())
                out.flush()
            self.terminating = False
            self.process = subprocess.Popen(
                self.argv, cwd=self.cwd, stdout=out, stderr=subprocess.STDOUT if out is not None else None,
                start_new_session=self.own_group,
            )
        finally:
            if out is not None:
                out.close()
        self.started_at = now

    def poll(self) -> int | None:
        """The exit code once it has stopped; None while it runs (or before it was started)."""
        return self.process.poll() if self.process is not None else None

    def kill_leftovers(self) -> None:
        """Kill what is left of its process group (its own group only: never the launcher's)."""
        if self.process is not None and self.own_group:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def terminate(self) -> None:
        """Ask it to stop (SIGTERM), once."""
        if self.process is not None and self.process.poll() is None and not self.terminating:
            self.terminating = True
            self.process.terminate()

    def stop(self, timeout: float = 20.0) -> None:
        """Stop it: SIGTERM, then SIGKILL after ``timeout`` seconds; and what is left of its group."""
        if self.process is None:
            return
        self.terminate()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)
        self.kill_leftovers()


def _how_it_ended(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def _say(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


class _Watch:
    """One supervised worker and its restart bookkeeping."""

    def __init__(self, child: Child) -> None:
        self.child = child
        self.fast_crashes = 0  # in a row
        self.restarts = 0
        self.restart_at: float | None = None
        self.gave_up = False


class Supervisor:
    """Keeps the web server and the workers running: a dead worker is restarted under ``policy`` (or given up on),
    each on its own count, while the web server serves on; :meth:`step` says when supervision must end (the web
    server stopped). ``on_started`` is called after every start and restart (the launcher records the pids).

    ``clock`` (seconds, monotonic) and the children are injectable: the tests drive it with a fake clock.
    """

    def __init__(self, web: Child, workers: Child | Sequence[Child], policy: RestartPolicy = RestartPolicy(),
                 say: Callable[[str], None] = _say, clock: Callable[[], float] = time.monotonic,
                 hint: str = "", on_started: Callable[[], None] = lambda: None) -> None:
        self.web, self.policy, self.say, self.clock, self.hint = web, policy, say, clock, hint
        self.watches = [_Watch(w) for w in ([workers] if isinstance(workers, Child) else workers)]
        self.on_started = on_started
        self.stopping = False

    @property
    def workers(self) -> list[Child]:
        return [w.child for w in self.watches]

    def start(self) -> None:
        now = self.clock()
        for watch in self.watches:
            watch.child.start(now, f"{watch.child.name} started")
        self.web.start(now)
        self.on_started()

    def step(self) -> str | None:
        """One look at every child; returns why the run must end (the web server stopped), else None."""
        code = self.web.poll()
        if code is not None:
            return f"the web server {_how_it_ended(code)}"
        if self.stopping:
            return None
        now = self.clock()
        for watch in self.watches:
            if not watch.gave_up:
                self._look_at(watch, now)
        return None

    def _look_at(self, watch: _Watch, now: float) -> None:
        worker = watch.child
        if watch.restart_at is not None:
            if now >= watch.restart_at:
                watch.restart_at = None
                watch.restarts += 1
                try:
                    worker.start(now, f"{worker.name} restarted (restart {watch.restarts})")
                except OSError as exc:  # no process could be made (out of memory, of pids): a crash like any other
                    self._crashed(watch, now, f"could not be started ({exc})", 0.0)
                else:
                    self.say(f"{worker.name} restarted (pid {worker.pid}, restart {watch.restarts})")
                    self.on_started()
            return
        code = worker.poll()
        if code is None:
            return
        worker.kill_leftovers()
        self._crashed(watch, now, _how_it_ended(code), now - worker.started_at)

    def _crashed(self, watch: _Watch, now: float, how: str, ran: float) -> None:
        """The worker is gone: schedule its restart after the policy's delay, or give up on it."""
        name = watch.child.name
        watch.fast_crashes = watch.fast_crashes + 1 if ran < self.policy.fast_crash_s else 0
        if watch.fast_crashes >= self.policy.give_up_after:
            watch.gave_up = True
            self.say(
                f"{name} {how} after {ran:.0f} s: it crashed {watch.fast_crashes} times in a row, "
                f"each within {self.policy.fast_crash_s:.0f} s of starting, so it is not restarted again. "
                f"The web server is still serving{self.hint}; the work of its queues waits for a worker "
                f"(see the {name} log, fix the cause, then restart the run command)."
            )
            return
        delay = self.policy.delay(watch.fast_crashes)
        watch.restart_at = now + delay
        self.say(f"{name} {how} after {ran:.0f} s; restarting it in {delay:.0f} s "
                 f"(restart {watch.restarts + 1}; the web server keeps serving)")

    def stop(self) -> None:
        self.stopping = True  # no restart once stopping
        for watch in self.watches:
            watch.restart_at = None
        children = [self.web, *self.workers]
        for child in children:  # all at once, then wait for each
            child.terminate()
        for child in children:
            child.stop()


def supervise(supervisor: Supervisor, tick: float = 0.5, sleep: Callable[[float], None] = time.sleep) -> str:
    """Step ``supervisor`` every ``tick`` seconds until the web server stops; returns why it did."""
    while True:
        reason = supervisor.step()
        if reason is not None:
            return reason
        sleep(tick)
