"""The kinds of job, each registered by the app that owns it (in its ``AppConfig.ready``), so that this layer
never imports the apps above it.

A kind says what the one life cycle needs to know of its rows: which model holds them, which task runs them (to
queue one again whose message was lost), what a page calls it and where it is shown, why it failed when its worker
was lost, and what to tidy once it has ended (an upload no job reads any more).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from webapp.jobs.models import Job

WORKER_LOST = "the worker running it stopped (killed, out of memory, or its machine went down)"


def _pk_only(job: Any) -> tuple[Any, ...]:
    return (job.pk,)


def _nothing(job: Any) -> str:
    return ""


def _lost(job: Any) -> str:
    return f"{WORKER_LOST}. Start it again."


def _no_cleanup(job: Any) -> None:
    return None


@dataclass(frozen=True)
class JobKind:
    name: str  # Job.kind
    label: str  # "Import", "Training run"
    model: Callable[[], type[Job]]  # the row of this kind (a Job subclass); called late, as apps load in order
    task: str  # the Celery task that runs one, by name
    args: Callable[[Any], tuple[Any, ...]] = _pk_only  # its arguments
    queue: str | None = None  # None: the task's route
    subject: Callable[[Any], str] = _nothing  # what it works on, in a few words ("medic.tsv → medic")
    url: Callable[[Any], str] = _nothing  # the page that shows it ("" when it has none)
    lost_reason: Callable[[Any], str] = _lost  # why it failed when its worker was lost, what to do
    fail: Callable[[Any, str], bool] | None = None  # fails a row with its kind's extras (a run's log); None: the job's
    missing_input: Callable[[Any], str] = _nothing  # why a queued one can never run ("" when it can)
    input_path: Callable[[Any], str] = _nothing  # an upload it reads ("" for none), kept while it is unfinished
    ended: Callable[[Any], None] = _no_cleanup  # tidying once it ended (its upload removed)
    stops_when_asked: bool = False  # whether a running one honours a cancel request (between batches)
    # A kind's own cancel (its row's state too, and its audit event), given the row and who asked; None: the job's.
    cancel: Callable[[Any, Any], None] | None = None
    related: tuple[str, ...] = ()  # what ``subject`` reads of its row, fetched with the rows of a list


_KINDS: dict[str, JobKind] = {}


def register(kind: JobKind) -> None:
    """Add a kind (an app's ``ready``); registering the same name again replaces it (a reload in tests)."""
    _KINDS[kind.name] = kind


def kind_of(name: str) -> JobKind | None:
    return _KINDS.get(name)


def kinds() -> list[JobKind]:
    return list(_KINDS.values())


def rows_of(jobs: Iterable[Job]) -> dict[int, Job]:
    """Many jobs as the rows of their kinds, by id: one query per kind (a list of jobs, a page of them)."""
    by_kind: dict[str, list[int]] = defaultdict(list)
    rows: dict[int, Job] = {}
    for job in jobs:
        kind = kind_of(job.kind)
        if kind is None or isinstance(job, kind.model()):
            rows[job.pk] = job
        else:
            by_kind[job.kind].append(job.pk)
    for name, pks in by_kind.items():
        kind = _KINDS[name]
        rows |= {row.pk: row for row in kind.model().objects.select_related(*kind.related).filter(pk__in=pks)}
    return rows


def row_of(job: Job) -> Job:
    """A job as the row of its kind (a ``TrainingRun``, an ``ImportJob``, ...): what its pages show. A kind without
    a row of its own (an index build, a detection batch) is the job itself."""
    kind = kind_of(job.kind)
    if kind is None or isinstance(job, kind.model()):
        return job
    return kind.model().objects.filter(pk=job.pk).first() or job
