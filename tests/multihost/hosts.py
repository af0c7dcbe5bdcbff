"""The multi-host test's hosts and the roles they run: one table, as docker/compose.yml's services are one file.

A *role* is one kind of process of a deployment (compose's services: ``postgres``, ``redis``, ``migrate``, ``web``,
``worker-cpu``, ``worker-interactive``, ``worker-gpu``, ``beat``); a *host* is one machine (here a network
namespace, tests/multihost/netns.py) running some roles. A test comparing this table with compose's services can
import :data:`ROLES` and :data:`HOSTS` without starting anything.

``beat`` is a role no host runs here: what the test shows of a dead worker (its run failed with a reason) is done
by every worker's own sweep thread (webapp.jobs.sweeper, every 5 s), not by the beat's minute-long slow path.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from webapp.celery import DEFAULT_QUEUE, GPU_QUEUE, INTERACTIVE_QUEUE

WEB_PORT = 8000
POSTGRES_PORT = 5432
REDIS_PORT = 6379


@dataclass(frozen=True)
class Role:
    """One kind of process. ``argv``: its command line after the Python interpreter (None: not a Python program,
    started by the harness itself: PostgreSQL, Redis). ``queues``: the Celery queues a worker takes."""

    name: str
    argv: tuple[str, ...] | None = None
    queues: tuple[str, ...] = ()
    one_shot: bool = False  # runs to its end before the long-running roles start (compose's migrate)
    env: dict[str, str] = field(default_factory=dict)


def _worker(queue: str, node: str, **env: str) -> Role:
    # -c 1: one pool process per worker (compose runs 2 for the CPU and interactive queues; the test's load is one job).
    argv = ("-m", "celery", "-A", "webapp", "worker", "-Q", queue, "-c", "1", "-n", f"{node}@%h", "--loglevel", "INFO")
    return Role(f"worker-{node}", argv, queues=(queue,), env=env)


ROLES: dict[str, Role] = {
    "postgres": Role("postgres"),
    "redis": Role("redis"),
    "migrate": Role("migrate", ("manage.py", "migrate", "--noinput"), one_shot=True),
    # gunicorn as the launcher and bench/load.py start it (webapp.launcher.web_server_argv), one worker process.
    "web": Role("web"),
    "worker-cpu": _worker(DEFAULT_QUEUE, "cpu"),
    "worker-interactive": _worker(INTERACTIVE_QUEUE, "interactive"),
    # On the CPU here; compose's worker-gpu sets LINKER_DEVICE=cuda on a machine with a GPU.
    "worker-gpu": _worker(GPU_QUEUE, "gpu", LINKER_DEVICE="cpu"),
    "beat": Role("beat", ("-m", "celery", "-A", "webapp", "beat", "--loglevel", "INFO")),
}


@dataclass(frozen=True)
class Host:
    name: str
    octet: int  # its address's last byte on the test's private /24
    roles: tuple[str, ...]


HOSTS: dict[str, Host] = {
    host.name: host
    for host in (
        Host("db", 2, ("postgres",)),
        Host("redis", 3, ("redis",)),
        Host("web1", 11, ("web",)),
        Host("web2", 12, ("web",)),
        # The default queue's host also migrates and seeds, and takes the interactive queue (compose's
        # worker-interactive): the run's evaluation and the sweeps' tasks go there.
        Host("default", 21, ("migrate", "worker-cpu", "worker-interactive")),
        Host("gpu", 22, ("worker-gpu",)),
    )
}
OPERATOR_OCTET = 1  # the test process's own end of the private network (the root namespace)


def python_argv(role: Role) -> list[str]:
    """The role's command line, with this interpreter (the project's virtual environment)."""
    assert role.argv is not None, f"{role.name} is not a Python program"
    return [sys.executable, *role.argv]


def roles_started() -> set[str]:
    """The roles some host runs (compose's services less those the test leaves out, ``beat``)."""
    return {role for host in HOSTS.values() for role in host.roles}
