"""Request latency for the Prometheus endpoint (``/metrics``, webapp.ops.metrics): a histogram by view, recorded by
:class:`RequestLatencyMiddleware`, and the exposition that puts it together with the figures computed at scrape
time.

Several gunicorn workers answer requests, and a scrape reaches one of them: prometheus-client's multiprocess mode
keeps each worker's samples in files under ``PROMETHEUS_MULTIPROC_DIR`` (set and emptied at the web server's start
by ``webapp.gunicorn_conf``), and a scrape adds up every worker's files. Without that variable (runserver, tests,
one process) the histogram lives in this process's memory. The variable must be set before prometheus-client is
first imported in the process, which the gunicorn config does before it loads the app.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, resolve
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
# Seconds: from a cached page (a few ms) to a cold linker load or an export (a minute or two).
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
# Any other method is counted as "other": a client inventing methods must not add series without end.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNRESOLVED = "<unresolved>"  # a path no route matches (a 404 before any view)

# registry=None: registered into each scrape's own registry (:func:`exposition`), never into the global one, so
# that the multiprocess collector and this process's memory are never both counted.
REQUEST_LATENCY = Histogram(
    "workbench_request_duration_seconds",
    "Time to answer a request, by the view's URL name, the method and the status class (2xx, 3xx, 4xx, 5xx).",
    ["view", "method", "status"],
    buckets=LATENCY_BUCKETS,
    registry=None,
)


def multiprocess_dir() -> Path | None:
    """The folder of the workers' samples, or None when this process is measured alone."""
    value = os.environ.get(MULTIPROC_ENV, "").strip()
    return Path(value) if value else None


def view_name(request: HttpRequest) -> str:
    """The namespaced URL name of the view that answered ("curation:panel"), the route's pattern where it
    has no name, or ``<unresolved>``. A request answered before the view was resolved (the login redirect) is
    resolved here, so that it is counted under the view it asked for."""
    match = getattr(request, "resolver_match", None)
    if match is None:
        try:
            match = resolve(request.path_info)
        except Resolver404:
            return UNRESOLVED
    return match.view_name or match.route or UNRESOLVED


class RequestLatencyMiddleware:
    """Times every request that reaches Django (static files are WhiteNoise's, before it) into
    ``workbench_request_duration_seconds``, and says the time in the answer's ``Server-Timing`` header
    (``app;dur=<ms>``): a browser's resource timing then splits a wait into server and the rest, per request
    (bench/curator_speed.py reads it so)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        elapsed = time.perf_counter() - started
        method = request.method if request.method in METHODS else "other"
        status = f"{response.status_code // 100}xx"
        REQUEST_LATENCY.labels(view=view_name(request), method=method, status=status).observe(elapsed)
        response["Server-Timing"] = f"app;dur={elapsed * 1000:.1f}"
        return response


def exposition(collectors: Iterable[Collector]) -> tuple[bytes, str]:
    """The text exposition of the request latency (every worker's, in multiprocess mode) and of ``collectors``
    (computed now), with its content type."""
    registry = CollectorRegistry(auto_describe=False)
    folder = multiprocess_dir()
    if folder is not None:
        MultiProcessCollector(registry, path=str(folder))
    else:
        registry.register(REQUEST_LATENCY)
    for collector in collectors:
        registry.register(collector)
    return generate_latest(registry), CONTENT_TYPE_LATEST
