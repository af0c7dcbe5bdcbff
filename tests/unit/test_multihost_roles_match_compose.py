"""The multi-host test's roles (tests/multihost/hosts.py) are docker/compose.yml's services: the same names, each
worker on the same queue, so that what the test shows of six hosts is what the compose stack deploys."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.multihost.hosts import HOSTS, ROLES, roles_started

COMPOSE = Path(__file__).resolve().parents[2] / "docker" / "compose.yml"


def _services() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())["services"]


def _queues(command: list[str]) -> tuple[str, ...]:
    return tuple(command[command.index("-Q") + 1].split(",")) if "-Q" in command else ()


def test_every_compose_service_is_a_role_and_every_role_a_service() -> None:
    assert set(_services()) == set(ROLES)


def test_each_worker_role_takes_its_compose_services_queues() -> None:
    services = _services()
    workers = {name for name, service in services.items() if "worker" in service.get("command", [])}
    assert workers == {name for name, role in ROLES.items() if role.queues}
    for name in workers:
        assert ROLES[name].queues == _queues(services[name]["command"]), name


def test_the_hosts_run_every_role_but_the_beat() -> None:
    # The workers' own sweep threads fail a dead worker's run; the beat's minute-long sweep is not waited for.
    assert roles_started() == set(ROLES) - {"beat"}
    assert all(role in ROLES for host in HOSTS.values() for role in host.roles)
