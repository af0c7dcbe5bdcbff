"""The workbench on six hosts (issue #44): PostgreSQL, Redis, two web hosts, a worker host for the default and
interactive queues and one for the gpu queue (on the CPU here), each a network namespace with its own address and
its own var/ (tests/multihost/hosts.py, netns.py). One test, its steps in the order a bad day brings them, each
timed (``[multihost] step ...: 12.3 s`` on stdout):

1. the hosts start and both web hosts serve the seeded index's candidates;
2. every process of the gpu host is killed mid-run: the run is failed with the reason, and the decisions curators
   made meanwhile on both web hosts are all kept;
3. with the gpu host down, a run is queued and Redis restarted: the message is still queued;
4. the gpu host comes back and trains that run; its index is promoted and both web hosts serve it;
5. no host has a route or a connection beyond the private network and loopback;
6. one web host is killed: the other keeps serving, and decisions made there are kept.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
import requests

from tests.multihost.cluster import Cluster, port_open, say, wait_for
from tests.multihost.hosts import WEB_PORT
from webapp.celery import GPU_QUEUE

pytestmark = [pytest.mark.multihost, pytest.mark.slow]

WEBS = ("web1", "web2")
WORKERS = ("default", "gpu")
# As the integration tests' tiny run: a frozen MiniLM with a small head, no synonym pre-training.
TINY = {"epochs": 2, "skip_pretrain": True, "topk": 4, "batch_size": 4, "train_scope": "head", "head_hidden": 32}
# The same, slowed down so that it is still running when its host dies.
SLOW = TINY | {"epochs": 400, "step_delay_s": 0.3}
TEXT = "Bronchial asthma and a heart attack."
WORKER_LOST = "worker lost"  # the start of the reason the sweep gives (webapp.jobs.kinds.WORKER_LOST)


class Api:
    """The workbench's REST API on a chosen web host, as the admin the seed made."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.headers = {"Authorization": f"Token {cluster.seeded['token']}"}

    def call(self, host: str, method: str, path: str, body: dict[str, Any] | None = None, ok: int = 200) -> Any:
        response = requests.request(method, self.cluster.web_url(host) + path, json=body, headers=self.headers,
                                    timeout=60)
        assert response.status_code == ok, f"{method} {path} on {host}: {response.status_code} {response.text[:500]}"
        return response.json()

    def link(self, host: str) -> dict[str, Any]:
        return self.call(host, "POST", "/api/link", {"dictionary": self.cluster.seeded["dictionary"], "text": TEXT})

    def start_run(self, host: str, params: dict[str, Any]) -> int:
        body = {"dictionary": "mini", "collections": ["gold"], "eval_collection": "dev", "params": params}
        return int(self.call(host, "POST", "/api/training-runs/", body, ok=202)["id"])

    def run(self, host: str, run_id: int) -> dict[str, Any]:
        return self.call(host, "GET", f"/api/training-runs/{run_id}/")

    def decide(self, host: str, mention_id: int, concept_id: str) -> None:
        mention = self.call(host, "GET", f"/api/mentions/{mention_id}/")
        self.call(host, "POST", f"/api/mentions/{mention_id}/decision/",
                  {"action": "relink", "concept_id": concept_id, "updated_at": mention["updated_at"]})


def _serves(answer: dict[str, Any], index: int) -> bool:
    return answer["index_version"] == index and all(m["candidates"] for m in answer["mentions"]) and bool(answer["mentions"])


def _fetched(cluster: Cluster, host: str) -> int:
    """How many artifacts ``host`` has fetched from the store into its own cache (webapp.artifacts.local)."""
    cache = cluster.var(host) / "artifacts" / "cache" / "store"
    return sum(1 for folder in cache.iterdir() if folder.is_dir()) if cache.is_dir() else 0


def _decisions(cluster: Cluster) -> set[int]:
    return {row[0] for row in cluster.sql("SELECT mention_id FROM curation_decision")}


def test_hosts_die_and_come_back_without_losing_work(cluster: Cluster) -> None:
    api = Api(cluster)
    mentions: list[int] = cluster.seeded["mentions"]
    with cluster.step("web and worker hosts up"):
        for host in (*WEBS, *WORKERS):
            cluster.start_host(host)
        cluster.wait_ready([*WEBS, *WORKERS])

    with cluster.step("both web hosts serve candidates"):
        for host in WEBS:
            assert _serves(api.link(host), cluster.seeded["index"]), host
        fetched = {host: _fetched(cluster, host) for host in WEBS}  # the seed's index, built on the default host

    with cluster.step("gpu host killed mid-run"):
        run = api.start_run("web1", SLOW)
        wait_for("the slow run running", lambda: (r := api.run("web2", run))["state"] == "running" and r["step"] >= 2, 120)
        api.decide("web1", mentions[0], "MESH:D001249")  # curators keep working on both web hosts meanwhile
        api.decide("web2", mentions[1], "MESH:D006973")
        say(f"killed {cluster.kill_host('gpu')} processes of the gpu host")
        ended = wait_for("the run no longer running", lambda: (r := api.run("web2", run))["state"] != "running" and r, 60)
        say(f"run {run}: {ended['state']}: {ended['error']}")
        assert ended["state"] in ("failed", "queued") and WORKER_LOST in ended["error"], ended
        assert "gpu" in ended["error"], "the reason does not name the host that died"
        assert _decisions(cluster) == set(mentions[:2])

    with cluster.step("queued run survives a Redis restart"):
        queued = api.start_run("web2", TINY)
        wait_for("the run's message on the gpu queue", lambda: cluster.redis().llen(GPU_QUEUE) == 1, 10)
        cluster.stop_redis()
        cluster.start_redis()
        assert cluster.redis().llen(GPU_QUEUE) == 1, "Redis lost the queued run's message in its restart"
        cluster.wait_ready(["default"])  # the default host's workers are back on the restarted Redis

    with cluster.step("gpu host back, trains the queued run"):
        cluster.start_host("gpu")
        cluster.wait_ready(["gpu"])
        done = wait_for("the queued run ended", lambda: (r := api.run("web1", queued))["state"] not in
                        ("queued", "running") and r, 300, every_s=0.5)
        assert done["state"] == "succeeded", done
        index = int(done["index_version"])

    with cluster.step("promoted index served by both web hosts"):
        cluster.run_once("default", [sys.executable, "manage.py", "promote_index", str(index)])
        for host in WEBS:
            wait_for(f"{host} serving index {index}", lambda h=host: _serves(api.link(h), index), 120, every_s=1.0)
            # Fetched from the store into the host's own cache: no host sees another's folders (Cluster.private).
            assert _fetched(cluster, host) > fetched[host], f"{host} fetched none of the gpu host's artifacts"

    with cluster.step("nothing left the private network"):
        leaks = {host: found for host in cluster.net.hosts if (found := cluster.net.leaks(host))}
        assert not leaks, leaks

    with cluster.step("one web host killed, the other serves"):
        say(f"killed {cluster.kill_host('web1')} processes of web1")
        wait_for("web1 refusing connections", lambda: not port_open(cluster.address("web1"), WEB_PORT), 5)
        assert _serves(api.link("web2"), index)
        api.decide("web2", mentions[2], "MESH:D009203")
        assert _decisions(cluster) == set(mentions[:3])

