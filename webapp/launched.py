"""What the run command started, written down in the embedded data folder so that `python -m webapp.launcher stop`
ends all of it: the launcher itself, its web server and its workers, then the embedded PostgreSQL and Redis.

The run command records its own process and each child's (:func:`record`, again after a worker restarts). Each
record carries the process's start time, so that a pid the kernel has since given to another process is never
signalled. :func:`stop_launched` asks the launcher to stop (SIGTERM: it stops its children as on Ctrl-C), then
stops whatever child is still there (a launcher killed by SIGKILL leaves them behind): SIGTERM, SIGKILL after a
grace period, a worker's whole process group (its pool processes and embedded beat).
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

from webapp import embedded

RECORD_FILE = "launcher.json"
# The launcher's own stop waits up to 20 s for each child before killing it (webapp.supervision.Child.stop).
LAUNCHER_GRACE_S = 60.0
CHILD_GRACE_S = 20.0


@dataclass(frozen=True)
class Launched:
    """One process the run command started (``name`` "launcher" for itself); ``group``: it leads a process group of
    its own, stopped as a whole."""

    name: str
    pid: int
    started: float  # psutil's create_time(): tells this process from a later one given the same pid
    group: bool = False

    @classmethod
    def of(cls, name: str, pid: int, group: bool = False) -> Launched:
        return cls(name, pid, psutil.Process(pid).create_time(), group)

    def process(self) -> psutil.Process | None:
        """The process, while it is the one recorded and has not ended (a zombie counts as ended)."""
        try:
            process = psutil.Process(self.pid)
            if abs(process.create_time() - self.started) > 0.01 or process.status() == psutil.STATUS_ZOMBIE:
                return None
        except psutil.Error:
            return None
        return process


def record_path() -> Path:
    return embedded.data_dir() / RECORD_FILE


def record(processes: Iterable[Launched]) -> None:
    """Write the records (replacing the file whole, so that `stop` never reads half of one)."""
    path = record_path()
    partial = path.with_suffix(".tmp")
    partial.write_text(json.dumps([asdict(p) for p in processes], indent=1))
    partial.replace(path)


def recorded() -> list[Launched]:
    """The records of the last run command; none when there is no file (or an unreadable one)."""
    try:
        rows = json.loads(record_path().read_text())
        return [Launched(str(r["name"]), int(r["pid"]), float(r["started"]), bool(r.get("group", False))) for r in rows]
    except (OSError, ValueError, TypeError, KeyError):
        return []


def forget(pid: int) -> None:
    """Remove the records, if they are the run command ``pid``'s (a second launcher may have written them since)."""
    launcher = next((p for p in recorded() if p.name == "launcher"), None)
    if launcher is None or launcher.pid == pid:
        record_path().unlink(missing_ok=True)


def stop_launched(say: Callable[[str], None] = print) -> bool:
    """Stop the recorded launcher, then any recorded child still running; whether anything was running. Each line
    said is true once the process is gone. :class:`RuntimeError` when one outlives even SIGKILL."""
    processes = recorded()
    launcher = [p for p in processes if p.name == "launcher"]
    children = [p for p in processes if p.name != "launcher"]
    stopped = False
    for each in launcher:
        if each.process() is not None:
            _stop(each, LAUNCHER_GRACE_S)
            say(f"launcher (pid {each.pid}) stopped, with its web server and workers")
            stopped = True
    for each in children:
        if each.process() is not None:  # left behind by a launcher that was killed
            _stop(each, CHILD_GRACE_S)
            say(f"{each.name} (pid {each.pid}) stopped")
            stopped = True
    record_path().unlink(missing_ok=True)
    return stopped


def _stop(each: Launched, grace_s: float) -> None:
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 10.0)):
        _signal(each, sig)
        if _ended(each, wait_s):
            if each.group:
                _signal_group(each.pid, signal.SIGKILL)  # what it forked and left behind
            return
    raise RuntimeError(f"{each.name} (pid {each.pid}) is still running after SIGKILL")


def _signal(each: Launched, sig: signal.Signals) -> None:
    process = each.process()
    if process is None:
        return
    if each.group:
        _signal_group(each.pid, sig)
    else:
        try:
            process.send_signal(sig)
        except psutil.Error:
            pass


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _ended(each: Launched, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while each.process() is not None:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True
