"""GET /metrics (issue #44): Prometheus scrapes it over real HTTP with the METRICS_TOKEN bearer token and finds every
figure an operator watches (request latency by view, queue depth per queue, jobs by kind and state and their
durations, decisions, the index each host serves); without the token, or as a non-admin, it is refused and never
sent to the login page. Under gunicorn with two workers, every scrape adds up both workers' requests
(prometheus-client's multiprocess mode, webapp.gunicorn_conf), and the folder of samples is emptied at start.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.conftest import PROJECT_ROOT, database_url
from tests.integration.project_fixtures import demo_collection  # noqa: F401 (fixture)
from webapp.core.queue import send_now
from webapp.corpus.models import Mention
from webapp.curation import services
from webapp.jobs.models import Job
from webapp.linking.models import IndexVersion
from webapp.linking.registry import get_active_linker

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = "scrape-me-7f3a"
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    """Every sample of an exposition, by name and labels."""
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def matching(samples: Samples, name: str, **labels: str) -> list[tuple[dict[str, str], float]]:
    """The samples of ``name`` whose labels include ``labels``."""
    return [(dict(key), v) for (n, key), v in samples.items() if n == name and set(labels.items()) <= key]


def get(url: str, token: str | None = None) -> tuple[int, str, dict[str, str]]:
    """GET over HTTP without following redirects: status, body, headers."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.build_opener(NoRedirect).open(request, timeout=60) as response:
            return response.status, response.read().decode(), dict(response.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), dict(exc.headers)


@pytest.fixture
def private_queue(settings) -> Any:  # type: ignore[no-untyped-def]
    """A queue of its own (a private worker's, TASK_QUEUE_OVERRIDE) that no worker takes, emptied afterwards."""
    from webapp.celery import app

    name = f"test-metrics-{uuid.uuid4().hex[:8]}"
    settings.TASK_QUEUE_OVERRIDE = name
    yield name
    with app.connection_for_write() as conn:
        channel = conn.default_channel
        channel.client.delete(*[channel._q_for_pri(name, p) for p in channel.priority_steps])


def test_a_scrape_with_the_token_finds_every_figure(live_server, demo_collection, alice, settings,  # noqa: F811
                                                     private_queue: str) -> None:  # type: ignore[no-untyped-def]
    settings.METRICS_TOKEN = TOKEN
    mention = Mention.objects.filter(document__collection=demo_collection).order_by("pk").first()
    assert mention is not None
    services.decide(user=alice, mention_id=mention.pk, action="nil", seen_updated_at=mention.updated_at, part=None)
    now = timezone.now()
    Job.objects.create(kind="detection", state=Job.State.SUCCEEDED, started_at=now - timedelta(seconds=3), finished_at=now)
    Job.objects.create(kind="detection", state=Job.State.QUEUED)
    for _ in range(2):  # two messages wait in the private queue: no worker takes it
        send_now("tasks.jobs.sweep_jobs")
    served = get_active_linker("medic-demo")  # this process (the live server's) now serves the active index
    assert served is not None
    for _ in range(3):
        assert get(f"{live_server.url}/accounts/login/")[0] == 200

    status, body, headers = get(f"{live_server.url}/metrics", TOKEN)
    assert status == 200, body
    assert headers["Content-Type"].startswith("text/plain; version=")  # the text exposition format
    samples = parse(body)

    login = value(samples, "workbench_request_duration_seconds_count", view="login", method="GET", status="2xx")
    assert login is not None and login >= 3
    assert (value(samples, "workbench_request_duration_seconds_bucket", view="login", method="GET", status="2xx",
                  le="+Inf") == login)
    assert value(samples, "workbench_broker_up") == 1
    assert value(samples, "workbench_queue_depth", queue=private_queue) == 2
    for queue in ("default", "gpu", "interactive"):
        depth = value(samples, "workbench_queue_depth", queue=queue)
        assert depth is not None and depth >= 0
    assert value(samples, "workbench_jobs", kind="detection", state="succeeded") == 1
    assert value(samples, "workbench_jobs", kind="detection", state="queued") == 1
    assert value(samples, "workbench_jobs", kind="training", state="running") == 0  # every kind and state, 0 too
    ran = {"kind": "detection", "state": "succeeded"}
    assert value(samples, "workbench_job_duration_seconds_count", **ran) == 1
    assert value(samples, "workbench_job_duration_seconds_sum", **ran) == pytest.approx(3.0)
    assert value(samples, "workbench_job_duration_seconds_bucket", le="1.0", **ran) == 0
    assert value(samples, "workbench_job_duration_seconds_bucket", le="5.0", **ran) == 1
    assert value(samples, "workbench_decisions_total") == 1
    assert value(samples, "workbench_decisions_last_minute") == 1
    index = IndexVersion.objects.get(pk=served.index_version_id)
    assert value(samples, "workbench_serving_index", host=socket.gethostname(), dictionary="medic-demo",
                 index_version=str(index.pk), label=index.label) == 1
    assert value(samples, "workbench_active_index", dictionary="medic-demo", index_version=str(index.pk),
                 label=index.label) == 1


def test_without_the_token_it_is_refused_never_sent_to_log_in(live_server, alice, bob, settings) -> None:  # type: ignore[no-untyped-def]
    settings.METRICS_TOKEN = TOKEN
    status, body, headers = get(f"{live_server.url}/metrics")
    assert status == 401 and headers["WWW-Authenticate"].startswith("Bearer"), body
    assert "workbench_" not in body
    assert get(f"{live_server.url}/metrics", "not-the-token")[0] == 403
    curator = Client()
    curator.force_login(bob)
    assert curator.get("/metrics").status_code == 403
    admin = Client()
    admin.force_login(alice)
    response = admin.get("/metrics")
    assert response.status_code == 200
    assert value(parse(response.content.decode()), "workbench_broker_up") == 1


def test_no_token_is_accepted_while_metrics_token_is_unset(db, settings) -> None:  # type: ignore[no-untyped-def]
    settings.METRICS_TOKEN = ""
    response = Client().get("/metrics", headers={"Authorization": "Bearer "})
    assert response.status_code == 403
    assert "METRICS_TOKEN is not set" in response.content.decode()


def test_a_dead_broker_is_said_and_the_rest_still_answers(db, settings, dead_broker, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    settings.METRICS_TOKEN = TOKEN
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)  # Celery reads it before its conf: dead_broker's must win
    started = time.monotonic()
    response = Client().get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert time.monotonic() - started < 10
    assert response.status_code == 200
    samples = parse(response.content.decode())
    assert value(samples, "workbench_broker_up") == 0
    assert not matching(samples, "workbench_queue_depth")
    assert value(samples, "workbench_decisions_total") == 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_two_gunicorn_workers_are_added_up_and_old_samples_are_cleared(db, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """gunicorn as the run command starts it (webapp.launcher.web_server_argv), two workers: the requests of both are
    in every scrape, whichever worker answers it."""
    from django.db import connection

    from webapp.launcher import web_server_argv

    folder = tmp_path / "metrics"
    folder.mkdir()
    (folder / "histogram_999999.db").write_bytes(b"an earlier server's samples")
    port = _free_port()
    env = dict(os.environ, DATABASE_URL=database_url(connection.settings_dict), METRICS_TOKEN=TOKEN,
               CELERY_BROKER_URL=django_settings.CELERY_BROKER_URL, PROMETHEUS_MULTIPROC_DIR=str(folder))
    argv = web_server_argv(sys.executable, "127.0.0.1", port, 2, tmp_path)
    web = subprocess.Popen(argv, cwd=PROJECT_ROOT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if get(f"{base}/accounts/login/")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, f"gunicorn did not answer; see {tmp_path / 'web.log'}"
            time.sleep(0.5)
        assert not (folder / "histogram_999999.db").exists()
        sent = 1
        # New connections until both workers have answered some (each writes its own file of samples).
        while len(list(folder.glob("histogram_*.db"))) < 2 and sent < 400:
            assert get(f"{base}/accounts/login/")[0] == 200
            sent += 1
        assert len(list(folder.glob("histogram_*.db"))) == 2, "one worker answered every request"
        for _ in range(6):  # scrapes answered by either worker
            status, body, _headers = get(f"{base}/metrics", TOKEN)
            assert status == 200, body
            samples = parse(body)
            assert value(samples, "workbench_request_duration_seconds_count", view="login", method="GET",
                         status="2xx") == sent
    finally:
        web.terminate()
        web.wait(timeout=30)
