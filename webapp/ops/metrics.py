"""The figures an operator watches, computed when Prometheus scrapes ``/metrics`` (webapp.ops.views): the depth of
each Celery queue, jobs by kind and state and how long they ran, curation decisions, and the indexes this process
serves. The request latency is recorded as requests come (webapp.core.metrics).

Everything here is read at scrape time from the database, the broker and this process, so it is the same whichever
gunicorn worker answers, except ``workbench_serving_index``: the linkers loaded in the process that answered.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count, DurationField, ExpressionWrapper, F, Q, Sum
from django.utils import timezone
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from webapp.curation.models import Decision
from webapp.jobs.kinds import kinds
from webapp.jobs.models import Job
from webapp.linking.models import IndexVersion
from webapp.linking.registry import served_indexes

# Seconds a finished job ran: a sweep or a detection (seconds) to a training run (hours).
JOB_DURATION_BUCKETS = (1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 4 * 3600.0, 12 * 3600.0)
DECISION_WINDOW = timedelta(minutes=1)
BROKER_TIMEOUT_S = 1.0  # a scrape must not wait on a dead broker for long: Prometheus times out at 10 s


def queue_names() -> list[str]:
    """The Celery queues the workers take (settings), and a private worker's queue where one is set."""
    names = list(settings.CELERY_TASK_QUEUES_NAMES)
    override = getattr(settings, "TASK_QUEUE_OVERRIDE", "")
    if override and override not in names:
        names.append(override)
    return names


def queue_depths() -> dict[str, int] | None:
    """The messages waiting in each queue (LLEN of its Redis lists, one per priority step); None when the broker is
    unreachable or is not Redis. Messages delivered to a worker and not yet acknowledged are not counted."""
    from webapp.celery import app

    try:
        with app.connection_for_write() as conn:  # the URL tasks are published to (as webapp.core.health)
            conn.ensure_connection(max_retries=1, timeout=BROKER_TIMEOUT_S)
            if conn.transport.driver_type != "redis":
                return None
            channel = conn.default_channel
            pipe = channel.client.pipeline()
            keys = [(name, channel._q_for_pri(name, p)) for name in queue_names() for p in channel.priority_steps]
            for _, key in keys:
                pipe.llen(key)
            depths = dict.fromkeys(queue_names(), 0)
            for (name, _), length in zip(keys, pipe.execute(), strict=True):
                depths[name] += int(length)
            return depths
    except Exception:  # kombu's OperationalError, redis' and socket errors: the broker is down, said by broker_up 0
        return None


def queue_families() -> Iterator[Metric]:
    depths = queue_depths()
    up = GaugeMetricFamily("workbench_broker_up", "Whether the broker (Redis) answered this scrape: 1 or 0.")
    up.add_metric([], 0 if depths is None else 1)
    yield up
    depth = GaugeMetricFamily("workbench_queue_depth", "Task messages waiting in each Celery queue (absent while "
                              "the broker is down).", labels=["queue"])
    for name, count in sorted((depths or {}).items()):
        depth.add_metric([name], count)
    yield depth


def job_families() -> Iterator[Metric]:
    """Job rows by kind and state (every registered kind and every state, 0 included, so that a series does not
    vanish), and the run time of every finished job as a histogram by kind and state."""
    counts = GaugeMetricFamily("workbench_jobs", "Jobs by kind and state (rows of webapp.jobs.Job).",
                               labels=["kind", "state"])
    found = {(row["kind"], row["state"]): row["n"] for row in Job.objects.values("kind", "state").annotate(n=Count("pk"))}
    names = sorted({kind.name for kind in kinds()} | {kind for kind, _ in found})
    for kind in names:
        for state in Job.State.values:
            counts.add_metric([kind, state], found.get((kind, state), 0))
    yield counts
    yield job_durations()


def job_durations() -> HistogramMetricFamily:
    """finished_at - started_at of every job that ended after starting, in one query. Computed from the rows at
    each scrape, so it only grows as jobs finish (rate() and histogram_quantile() work on it as on a recorded
    histogram); deleting job rows lowers it."""
    ran = ExpressionWrapper(F("finished_at") - F("started_at"), output_field=DurationField())
    buckets = {f"le_{i}": Count("pk", filter=Q(ran__lte=timedelta(seconds=bound)))
               for i, bound in enumerate(JOB_DURATION_BUCKETS)}
    rows = (Job.objects.filter(state__in=Job.TERMINAL_STATES, started_at__isnull=False, finished_at__isnull=False)
            .annotate(ran=ran).values("kind", "state").annotate(n=Count("pk"), total=Sum("ran"), **buckets)
            .order_by("kind", "state"))
    family = HistogramMetricFamily("workbench_job_duration_seconds", "How long finished jobs ran (started to "
                                   "finished), by kind and end state; computed from the job rows at each scrape.",
                                   labels=["kind", "state"])
    for row in rows:
        cumulative: list[tuple[str, float]] = [(str(bound), row[f"le_{i}"]) for i, bound in enumerate(JOB_DURATION_BUCKETS)]
        cumulative.append(("+Inf", row["n"]))
        total = row["total"].total_seconds() if row["total"] is not None else 0.0
        family.add_metric([row["kind"], row["state"]], cumulative, sum_value=total)
    return family


def decision_families() -> Iterator[Metric]:
    since = timezone.now() - DECISION_WINDOW
    counted = Decision.objects.aggregate(total=Count("pk"), recent=Count("pk", filter=Q(created_at__gte=since)))
    total = CounterMetricFamily("workbench_decisions", "Curation decisions ever made (Decision rows, undone ones "
                                "included); rate() of it is decisions per second.")
    total.add_metric([], counted["total"])
    yield total
    recent = GaugeMetricFamily("workbench_decisions_last_minute", "Curation decisions made in the last 60 seconds.")
    recent.add_metric([], counted["recent"])
    yield recent


def serving_families() -> Iterator[Metric]:
    """The index versions loaded in this process (1 each, by host) and those the database says are active."""
    host = socket.gethostname()
    related = ("dictionary", "dictionary_version", "encoder")
    serving = GaugeMetricFamily("workbench_serving_index", "An index version loaded for serving in the process that "
                                "answered this scrape: 1.", labels=["host", "dictionary", "index_version", "label"])
    loaded = served_indexes()
    for index in IndexVersion.objects.filter(pk__in=loaded).select_related(*related).order_by("pk"):
        serving.add_metric([host, index.dictionary.slug, str(index.pk), index.label], 1)
    yield serving
    active = GaugeMetricFamily("workbench_active_index", "The active index version of each dictionary (the database's "
                               "word, which every host serves within a second of its next request): 1.",
                               labels=["dictionary", "index_version", "label"])
    for index in (IndexVersion.objects.filter(state=IndexVersion.State.ACTIVE).select_related(*related)
                  .order_by("dictionary__slug")):
        active.add_metric([index.dictionary.slug, str(index.pk), index.label], 1)
    yield active


class WorkbenchCollector(Collector):
    """Every figure of this module, computed when collected."""

    def collect(self) -> Iterator[Metric]:
        yield from queue_families()
        yield from job_families()
        yield from decision_families()
        yield from serving_families()

    def describe(self) -> list[Any]:
        return []  # nothing to describe ahead: registering must not query the database
