"""`python -m webapp.launcher stop` really stops the embedded PostgreSQL (a real server in a temporary folder)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from webapp import embedded


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.slow
def test_stop_postgres_ends_the_postmaster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A folder the pgserver system user can enter when the tests run as root.
    tmp_path.chmod(0o755)
    monkeypatch.setenv("EMBEDDED_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    embedded.postgres_url()
    pid_file = tmp_path / "pgdata" / "postmaster.pid"
    pid = int(pid_file.read_text().splitlines()[0])
    assert _alive(pid)

    assert embedded.stop_postgres() is True

    deadline = time.monotonic() + 30
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(pid), "the embedded postmaster is still running after stop"
    assert not pid_file.exists()
    assert embedded.stop_postgres() is False  # nothing left to stop


@pytest.mark.slow
def test_launcher_stop_leaves_no_postmaster_and_no_redis_server_and_says_so(tmp_path: Path) -> None:
    """`python -m webapp.launcher stop` as a user runs it: both servers of this data folder end, and it says so
    only then; a second stop says nothing was running."""
    import subprocess
    import sys

    tmp_path.chmod(0o755)  # the pgserver system user enters it when the tests run as root
    env = dict(os.environ, EMBEDDED_DATA_DIR=str(tmp_path), XDG_RUNTIME_DIR=str(tmp_path / "run"))
    start = "from webapp import embedded; embedded.postgres_url(); embedded.redis_url()"
    subprocess.run([sys.executable, "-c", start], env=env, check=True, cwd=embedded.PROJECT_ROOT, timeout=120)
    postmaster = int((tmp_path / "pgdata" / "postmaster.pid").read_text().splitlines()[0])
    redis_server = int((tmp_path / "redis" / "redis.pid").read_text().split()[0])
    assert _alive(postmaster) and _alive(redis_server)

    stop = [sys.executable, "-m", "webapp.launcher", "stop"]
    done = subprocess.run(stop, env=env, capture_output=True, text=True, cwd=embedded.PROJECT_ROOT, timeout=120)

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["launcher: none was running", "embedded Redis stopped", "embedded PostgreSQL stopped"]
    assert not _alive(postmaster) and not _alive(redis_server)
    again = subprocess.run(stop, env=env, capture_output=True, text=True, cwd=embedded.PROJECT_ROOT, timeout=120)
    assert again.stdout.splitlines() == ["launcher: none was running", "embedded Redis: none was running",
                                         "embedded PostgreSQL: none was running"]


@pytest.mark.slow
def test_the_test_command_stops_the_embedded_servers_it_started(tmp_path: Path) -> None:
    """`scripts/test` on a machine where no embedded server runs starts them (Django's settings do) and leaves
    none running when it ends."""
    import subprocess

    tmp_path.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")}
    env.update(EMBEDDED_DATA_DIR=str(tmp_path), XDG_RUNTIME_DIR=str(tmp_path / "run"))
    command = ["scripts/test", "-q", "-p", "no:cacheprovider", "tests/unit/test_text.py"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=embedded.PROJECT_ROOT, timeout=300)

    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert (tmp_path / "redis").is_dir() and (tmp_path / "pgdata").is_dir(), "the run did not use the embedded servers"
    assert not (tmp_path / "pgdata" / "postmaster.pid").exists(), "the embedded PostgreSQL is still running"
    redis_pid = tmp_path / "redis" / "redis.pid"
    assert not redis_pid.exists() or not _alive(int(redis_pid.read_text().split()[0])), "the embedded Redis still runs"
    assert not list((tmp_path / "test-runs").iterdir())
