"""`python -m webapp.launcher stop` ends what the run command recorded (webapp.launched), with real processes: a
launcher that stops its own children on SIGTERM, children a killed launcher left behind (a worker's pool process
too), and never a process that merely got a recorded pid again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from webapp import launched
from webapp.launched import Launched

PY = sys.executable
SLEEPS = [PY, "-c", "import time; time.sleep(120)"]


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _wait_for(path: Path) -> str:
    deadline = time.monotonic() + 30
    while not path.exists() or not path.read_text():
        assert time.monotonic() < deadline, f"{path} was never written"
        time.sleep(0.05)
    return path.read_text()


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("EMBEDDED_DATA_DIR", str(tmp_path))
    return tmp_path


def test_a_launcher_killed_outright_leaves_children_that_stop_ends_with_what_they_forked(data: Path) -> None:
    pool = data / "pool.pid"
    # A worker in a process group of its own that forked a pool process (as a Celery worker does).
    worker = subprocess.Popen([PY, "-c", (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
        f"open({str(pool)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(120)\n")], start_new_session=True)
    web = subprocess.Popen(SLEEPS)
    launcher = subprocess.Popen(SLEEPS)
    launched.record([Launched.of("launcher", launcher.pid), Launched.of("web server", web.pid),
                     Launched.of("worker", worker.pid, group=True)])
    pool_pid = int(_wait_for(pool))
    launcher.kill()  # SIGKILL: no chance to stop its children
    launcher.wait()
    said: list[str] = []
    try:
        assert launched.stop_launched(said.append) is True
    finally:
        for process in (web, worker):
            process.poll() is None and process.kill()
    assert said == [f"web server (pid {web.pid}) stopped", f"worker (pid {worker.pid}) stopped"]
    assert web.wait(5) == -signal.SIGTERM and worker.wait(5) == -signal.SIGTERM
    assert _gone(pool_pid), "the worker's pool process outlived it"
    assert not launched.record_path().exists()
    assert launched.stop_launched(said.append) is False  # nothing left: nothing said
    assert len(said) == 2


def test_a_recorded_pid_now_of_another_process_is_left_alone(data: Path) -> None:
    other = subprocess.Popen(SLEEPS)
    try:
        started = psutil.Process(other.pid).create_time()
        launched.record([Launched("launcher", other.pid, started - 100.0)])  # the pid, but an older process's
        assert launched.stop_launched() is False
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


def test_the_launcher_is_asked_to_stop_and_stops_its_children_itself(data: Path) -> None:
    """SIGTERM to the launcher (the real Supervisor in a child process): it stops its web server and workers."""
    children = data / "children"
    script = (
        "import os, sys, signal\n"
        "from webapp.supervision import Child, Supervisor, supervise\n"
        "from webapp import launched\n"
        f"sleeps = {SLEEPS!r}\n"
        "web = Child('web server', sleeps)\n"
        "workers = [Child('worker', sleeps, own_group=True), Child('interactive worker', sleeps, own_group=True)]\n"
        "supervisor = Supervisor(web, workers)\n"
        "def on_sigterm(*_):\n"
        "    raise KeyboardInterrupt\n"
        "signal.signal(signal.SIGTERM, on_sigterm)\n"
        "try:\n"
        "    supervisor.start()\n"
        "    launched.record([launched.Launched.of('launcher', os.getpid())] + "
        "[launched.Launched.of(c.name, c.pid, c.own_group) for c in [web, *workers]])\n"
        f"    open({str(children)!r}, 'w').write(' '.join(str(c.pid) for c in [web, *workers]))\n"
        "    supervise(supervisor, tick=0.05)\n"
        "except KeyboardInterrupt:\n"
        "    pass\n"
        "finally:\n"
        "    supervisor.stop()\n"
    )
    launcher = subprocess.Popen([PY, "-c", script], env=os.environ.copy(), cwd=Path(__file__).resolve().parents[2])
    try:
        pids = [int(p) for p in _wait_for(children).split()]
        said: list[str] = []
        assert launched.stop_launched(said.append) is True
        assert said == [f"launcher (pid {launcher.pid}) stopped, with its web server and workers"]
        assert launcher.wait(5) == 0  # it ended by itself, stopping its children first
        assert all(_gone(pid) for pid in pids)
    finally:
        launcher.poll() is None and launcher.kill()


def test_the_launcher_records_its_running_children_and_leaves_out_one_that_ended(data: Path) -> None:
    from webapp.launcher import _record
    from webapp.supervision import Child, Supervisor

    web, crashing = Child("web server", SLEEPS), Child("worker", [PY, "-c", "pass"], own_group=True)
    supervisor = Supervisor(web, [crashing])
    supervisor.on_started = lambda: _record(supervisor)
    supervisor.start()
    try:
        assert crashing.process is not None
        crashing.process.wait(30)
        _record(supervisor)  # as after a restart: the dead worker is not recorded, and nothing raises
        assert [(r.name, r.pid) for r in launched.recorded()] == [("launcher", os.getpid()), ("web server", web.pid)]
    finally:
        supervisor.stop()
