"""The multi-host harness as a fixture: the namespaces and the backing services (PostgreSQL, Redis) up, the database
migrated and seeded; the test starts the workbench's hosts itself (it kills and restarts them). Everything is
killed and removed at the end, whatever happened (MULTIHOST_KEEP=1 keeps the hosts' folders for a look)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from tests.multihost.cluster import Cluster, make_root, say
from tests.multihost.hosts import HOSTS, OPERATOR_OCTET
from tests.multihost.netns import Network, free_subnet, remove_stale, unavailable

# Every step's timing of this session's runs, for the terminal summary (printed even when output is captured).
TIMINGS: list[tuple[str, float]] = []


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if TIMINGS:
        terminalreporter.write_line("[multihost] timings: " + ", ".join(f"{name} {took:.1f} s" for name, took in TIMINGS)
                                    + f"; {sum(took for _, took in TIMINGS):.0f} s in all")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    reason = unavailable()
    if reason and shutil.which("ip") is None and os.environ.get("CI", "").lower() not in ("", "0", "false"):
        # .ci/run installs iproute2: its absence there is CI's fault (as the browser tests' missing tools); a machine
        # that refuses namespaces (no root, a container without CAP_SYS_ADMIN) is skipped, saying why.
        pytest.fail(f"CI runs every test it can: {reason}")
    if reason:
        pytest.skip(reason)
    stale = remove_stale()
    if stale:
        say(f"removed what an earlier run left: {', '.join(stale)}")
    # Named after this process (what remove_stale reads); a /24 of its own, so that two runs on one machine never meet.
    network = Network(f"mh{os.getpid()}", free_subnet(os.getpid()))
    root = make_root()
    cluster = Cluster(network, root)
    try:
        with cluster.step("namespaces"):
            network.up(OPERATOR_OCTET)
            for host in HOSTS.values():
                network.add_host(host.name, host.octet)
        with cluster.step("postgres and redis"):
            cluster.start_postgres()
            cluster.start_redis()
        with cluster.step("migrate and seed"):
            cluster.migrate_and_seed()
        yield cluster
    finally:
        cluster.down()
        if os.environ.get("MULTIHOST_KEEP"):
            say(f"hosts' folders kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
        say("timings: " + ", ".join(f"{name} {took:.1f} s" for name, took in cluster.timings))
        TIMINGS.extend(cluster.timings)
