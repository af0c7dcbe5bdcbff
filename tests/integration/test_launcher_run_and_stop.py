"""The run command as a user runs it (`python -m webapp.launcher run`, real gunicorn and Celery workers, against the
test database and broker), then `python -m webapp.launcher stop` from another process: the launcher, its web server,
both workers and their pool processes are all gone, and it says so. While it runs, the short work has a worker of
its own (queue ``interactive``), which has loaded no model weights while idle."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from tests.integration.conftest import PROJECT_ROOT, database_url
from webapp import launched

pytestmark = [pytest.mark.slow, pytest.mark.worker]

TINY_OBO = """format-version: 1.2

[Term]
id: T:0001
name: heart attack
synonym: "myocardial infarction" EXACT []

[Term]
id: T:0002
name: high blood pressure
"""
HANG_GUARD_S = 300  # only against a hang: the launcher is up in well under a minute on a quiet machine


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _family(pid: int) -> set[int]:
    process = psutil.Process(pid)
    return {pid, *(p.pid for p in process.children(recursive=True))}


def _model_files(pid: int) -> list[str]:
    """The model weights a process has mapped (a transformer's safetensors are mapped when loaded)."""
    try:
        return [m.path for m in psutil.Process(pid).memory_maps() if m.path.endswith((".safetensors", ".bin", ".pt"))]
    except psutil.NoSuchProcess:
        return []


def test_stop_ends_the_launcher_its_web_server_and_both_workers(  # type: ignore[no-untyped-def]
    transactional_db, settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.db import connection

    from webapp.celery import app

    data, folder = tmp_path / "var", tmp_path / "data"
    data.mkdir()
    folder.mkdir()
    (folder / "tiny.obo").write_text(TINY_OBO)  # a data folder of two concepts: a sparse index in a moment
    monkeypatch.setenv("EMBEDDED_DATA_DIR", str(data))  # where this process reads the launcher's records
    env = {k: v for k, v in os.environ.items() if k != "TASK_QUEUE_OVERRIDE"}
    env |= {"DATABASE_URL": database_url(connection.settings_dict), "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
            "CELERY_RESULT_BACKEND": settings.CELERY_RESULT_BACKEND, "DB_CONN_MAX_AGE": "0",
            "EMBEDDED_DATA_DIR": str(data), "ADMIN_PASSWORD": "launcher-test-password", "ARTIFACT_ROOT": str(tmp_path / "a")}
    port = _free_port()
    out = tmp_path / "launcher.out"
    launcher = subprocess.Popen([sys.executable, "-m", "webapp.launcher", "run", "--data", str(folder), "--port", str(port),
                                 "--web-workers", "1"], cwd=PROJECT_ROOT, env=env, stdout=open(out, "wb"),
                                stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + HANG_GUARD_S
        while "is running at" not in out.read_text():
            assert launcher.poll() is None, f"the launcher ended:\n{out.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"the launcher did not come up:\n{out.read_text()[-3000:]}"
            time.sleep(0.5)
        assert "Workers: ready" in out.read_text()
        records = {r.name: r for r in launched.recorded()}
        assert set(records) == {"launcher", "web server", "worker", "interactive worker"}
        assert records["launcher"].pid == launcher.pid
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=30) as response:
            assert response.status == 200

        # Short work has a worker of its own; the long work's worker runs the beat.
        host = os.uname().nodename
        queues = app.control.inspect(destination=[f"worker@{host}", f"interactive@{host}"], timeout=5).active_queues()
        assert {name: {q["name"] for q in qs} for name, qs in queues.items()} == {
            f"worker@{host}": {"default", "gpu"}, f"interactive@{host}": {"interactive"}}
        interactive = _family(records["interactive worker"].pid)
        assert len(interactive) == 2  # its main process and one pool process
        assert not [path for pid in interactive for path in _model_files(pid)], "the idle interactive worker loaded a model"

        everything = set().union(*(_family(r.pid) for r in records.values()))
        assert len(everything) >= 7  # launcher, gunicorn and its worker, two workers with their pools (and the beat)
        stop = subprocess.run([sys.executable, "-m", "webapp.launcher", "stop"], cwd=PROJECT_ROOT, env=env,
                              capture_output=True, text=True, timeout=HANG_GUARD_S)
        assert stop.returncode == 0, stop.stderr
        assert stop.stdout.splitlines() == [
            f"launcher (pid {launcher.pid}) stopped, with its web server and workers",
            "embedded Redis: none was running", "embedded PostgreSQL: none was running"]  # this run's are the test's
        assert launcher.wait(timeout=10) == 0
        left = sorted(pid for pid in everything if not _gone(pid))
        assert not left, f"still running after stop: {[psutil.Process(p).cmdline() for p in left]}"
        assert not launched.record_path().exists()
        with pytest.raises(OSError):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5)
    finally:
        if launcher.poll() is None:
            launcher.kill()
        for record in launched.recorded():
            if record.process() is not None:
                os.killpg(record.pid, 9) if record.group else os.kill(record.pid, 9)
