"""The run command's supervision (webapp.supervision.Supervisor) with real short-lived processes and a fake clock:
a dead worker is restarted after a growing delay, each restart said; after repeated fast crashes it is left
stopped with a clear message while the web server serves on; only the web server stopping ends the run."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import pytest

from webapp.supervision import Child, RestartPolicy, Supervisor, supervise

PY = sys.executable
SLEEPS = [PY, "-c", "import time; time.sleep(60)"]
CRASHES = [PY, "-c", "import sys; sys.exit(3)"]
KILLED = [PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _supervisor(worker_argv: list[str], tmp_path: Path, policy: RestartPolicy, web_argv: list[str] = SLEEPS):  # type: ignore[no-untyped-def]
    clock, said = Clock(), list[str]()
    web = Child("web", web_argv)
    worker = Child("worker", worker_argv, log=tmp_path / "worker.log", own_group=True)
    supervisor = Supervisor(web, worker, policy, say=said.append, clock=clock, hint=" at http://127.0.0.1:8000/")
    return supervisor, clock, said


def _ended(child: Child) -> int:
    assert child.process is not None
    return child.process.wait(timeout=30)


def test_a_crashing_worker_is_restarted_with_a_growing_delay_then_given_up_on_while_the_web_serves(tmp_path: Path) -> None:
    policy = RestartPolicy(first_delay_s=1, max_delay_s=4, fast_crash_s=60, give_up_after=4)
    supervisor, clock, said = _supervisor(CRASHES, tmp_path, policy)
    supervisor.start()
    try:
        pids = [supervisor.workers[0].pid]
        for restart, delay in enumerate([1, 2, 4], start=1):  # 1 s, then doubled, then capped at 4 s
            assert _ended(supervisor.workers[0]) == 3
            clock.now += 0.5
            assert supervisor.step() is None
            assert said[-1] == (f"worker exited with code 3 after 0 s; restarting it in {delay} s "
                                f"(restart {restart}; the web server keeps serving)")
            clock.now += delay - 0.1
            assert supervisor.step() is None and supervisor.workers[0].pid == pids[-1]  # not before its delay
            clock.now += 0.1
            assert supervisor.step() is None and supervisor.workers[0].pid != pids[-1]
            pids.append(supervisor.workers[0].pid)
            assert said[-1] == f"worker restarted (pid {pids[-1]}, restart {restart})"
        assert _ended(supervisor.workers[0]) == 3
        clock.now += 0.5
        assert supervisor.step() is None  # the fourth fast crash in a row: given up, the run goes on
        assert supervisor.watches[0].gave_up
        assert said[-1].startswith("worker exited with code 3 after 0 s: it crashed 4 times in a row, each within "
                                   "60 s of starting, so it is not restarted again. The web server is still serving "
                                   "at http://127.0.0.1:8000/")
        clock.now += 3600
        for _ in range(3):
            assert supervisor.step() is None
        assert supervisor.workers[0].pid == pids[-1] and supervisor.watches[0].restarts == 3
        assert supervisor.web.poll() is None  # serving all along
    finally:
        supervisor.stop()
    log = (tmp_path / "worker.log").read_text()
    assert "launcher: worker started" in log and "launcher: worker restarted (restart 3)" in log


def test_a_worker_that_ran_a_while_is_restarted_after_the_first_delay_and_its_count_starts_again(tmp_path: Path) -> None:
    policy = RestartPolicy(first_delay_s=1, max_delay_s=30, fast_crash_s=60, give_up_after=2)
    supervisor, clock, said = _supervisor(KILLED, tmp_path, policy)
    supervisor.start()
    try:
        assert _ended(supervisor.workers[0]) == -signal.SIGKILL
        clock.now = 5.0
        supervisor.step()  # a fast crash: one of the two allowed
        assert said[-1].startswith("worker was killed by SIGKILL after 5 s; restarting it in 1 s (restart 1")
        clock.now = 6.0
        supervisor.step()
        assert _ended(supervisor.workers[0]) == -signal.SIGKILL
        clock.now = 600.0  # this one had run ten minutes: not a fast crash, so no giving up
        supervisor.step()
        assert not supervisor.watches[0].gave_up and supervisor.watches[0].fast_crashes == 0
        assert said[-1].startswith("worker was killed by SIGKILL after 594 s; restarting it in 1 s (restart 2")
    finally:
        supervisor.stop()


def _state(pid: int) -> str:
    """The process's state letter ('Z': a zombie, as good as dead), or '' when there is none."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return ""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_what_a_dead_worker_forked_is_killed_with_it(tmp_path: Path) -> None:
    pid_file = tmp_path / "pool.pid"
    forks_then_dies = [PY, "-c", (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "sys.exit(1)\n"
    )]
    supervisor, clock, said = _supervisor(forks_then_dies, tmp_path, RestartPolicy(first_delay_s=60))
    supervisor.start()
    try:
        assert _ended(supervisor.workers[0]) == 1
        orphan = int(pid_file.read_text())
        assert _state(orphan) not in ("", "Z")  # left running by its parent (a pool process, an embedded beat)
        clock.now = 1.0
        supervisor.step()
        deadline = time.monotonic() + 10
        while _state(orphan) not in ("", "Z") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _state(orphan) in ("", "Z"), "the dead worker's pool process is still running"
    finally:
        supervisor.stop()


def test_the_web_server_stopping_ends_the_run_and_stops_the_worker(tmp_path: Path) -> None:
    supervisor, clock, said = _supervisor(SLEEPS, tmp_path, RestartPolicy(), web_argv=[PY, "-c", "import sys; sys.exit(4)"])
    supervisor.start()
    try:
        assert supervise(supervisor, tick=0.05) == "the web server exited with code 4"
        assert supervisor.workers[0].poll() is None  # the caller stops it
    finally:
        supervisor.stop()
    assert supervisor.workers[0].poll() == -signal.SIGTERM
    assert supervisor.workers[0].pid is not None and _state(supervisor.workers[0].pid) in ("", "Z")


def test_stopping_never_restarts_the_worker(tmp_path: Path) -> None:
    supervisor, clock, said = _supervisor(CRASHES, tmp_path, RestartPolicy(first_delay_s=0))
    supervisor.start()
    _ended(supervisor.workers[0])
    supervisor.stop()
    pid = supervisor.workers[0].pid
    clock.now = 100.0
    assert supervisor.step() == "the web server was killed by SIGTERM"
    assert supervisor.workers[0].pid == pid and not said


def test_the_policy_doubles_the_delay_up_to_its_cap() -> None:
    policy = RestartPolicy(first_delay_s=1, max_delay_s=30)
    assert [policy.delay(n) for n in range(8)] == [1, 1, 2, 4, 8, 16, 30, 30]


def test_a_worker_that_cannot_even_be_started_counts_as_a_crash(tmp_path: Path) -> None:
    supervisor, clock, said = _supervisor(CRASHES, tmp_path, RestartPolicy(first_delay_s=1, give_up_after=3))
    supervisor.start()
    try:
        _ended(supervisor.workers[0])
        supervisor.workers[0].argv = [str(tmp_path / "no-such-program")]
        clock.now = 0.5
        supervisor.step()
        clock.now = 1.5
        supervisor.step()  # the restart fails: no process at all
        assert said[-1].startswith("worker could not be started ([Errno 2] No such file or directory")
        assert said[-1].endswith("after 0 s; restarting it in 2 s (restart 2; the web server keeps serving)")
        clock.now = 3.5
        supervisor.step()
        assert supervisor.watches[0].gave_up and "crashed 3 times in a row" in said[-1]
        assert supervisor.web.poll() is None
    finally:
        supervisor.stop()


def test_each_worker_is_restarted_on_its_own_count_while_the_other_runs_on(tmp_path: Path) -> None:
    clock, said, started = Clock(), list[str](), list[int]()
    steady = Child("worker", SLEEPS, log=tmp_path / "worker.log", own_group=True)
    crashing = Child("interactive worker", CRASHES, log=tmp_path / "interactive-worker.log", own_group=True)
    supervisor = Supervisor(Child("web server", SLEEPS), [steady, crashing], RestartPolicy(first_delay_s=1, give_up_after=2),
                            say=said.append, clock=clock, on_started=lambda: started.append(len(said)))
    supervisor.start()
    try:
        pid = steady.pid
        _ended(crashing)
        clock.now = 0.5
        supervisor.step()
        assert said[-1] == ("interactive worker exited with code 3 after 0 s; restarting it in 1 s "
                            "(restart 1; the web server keeps serving)")
        clock.now = 1.5
        supervisor.step()
        assert said[-1].startswith("interactive worker restarted (pid ")
        assert len(started) == 2  # the first start and the restart: the launcher records the new pid
        _ended(crashing)
        clock.now = 2.0
        supervisor.step()
        assert supervisor.watches[1].gave_up and "interactive worker exited with code 3 after 0 s: it crashed 2" in said[-1]
        assert not supervisor.watches[0].gave_up and steady.pid == pid and steady.poll() is None
    finally:
        supervisor.stop()
    assert steady.poll() == -signal.SIGTERM
