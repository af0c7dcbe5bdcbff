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
