"""Curator statistics from the decision log: how many decisions, at what pace, in how long a look, and how often
the model's top suggestion was the answer; per curator and per project.

Only decisions that stand count (``undone_at`` empty). Decisions that are no curator's judgement, the linker's
auto-accepts (``via="auto"``) and a decision applied to identical mentions (``via="propagated"``), are counted on
their own and left out of every rate.

**Active time.** The log has no sessions, so a curator's active time is read off the gaps between their
consecutive decisions: a gap of at most :data:`IDLE_CUTOFF` counts in full; a longer one is a break and counts
nothing, and the decision after it (as the very first one) counts its own time on task (capped at the cut-off)
where the screen recorded one, else nothing. Decisions per hour (decisions / active hours) then mean the pace
while curating, also for someone who curates twenty minutes a day; under :data:`MIN_ACTIVE_FOR_RATE` of active
time no pace is given (two decisions a second apart are no pace). On a project's page the gaps are taken
between the curator's decisions in that project; the workbench-wide row takes them over all their decisions, so
time switching between projects is counted once.

**Top-1 acceptance.** Among link decisions (accept, relink, NIL) made on suggestions of a model, the share whose
chosen concept was the model's first (``rank == 1``; NIL never is). A decision is on suggestions of a model when
it names the model version or the rank of the chosen concept: an accept of the gold concept of a mention the
model never linked has neither and is left out. ``decisions`` counts every curator judgement.

Computed in Python from one ``values_list`` over the decisions, ordered by curator and time: the figures need the
ordered gaps with a cut-off, percentiles and breakdowns per action, per curator and per project from the same
rows, which SQL window functions and ``percentile_cont`` would spread over several queries; a hand-curated log
of 100,000 decisions (months of a team's work) reads in well under a second.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from statistics import median
from typing import NamedTuple

from django.db.models import Count, Q, QuerySet

from webapp.curation.models import Decision
from webapp.projects.models import Assignment, Member, Project
from webapp.projects.selectors import project_documents

IDLE_CUTOFF = timedelta(minutes=10)
MIN_ACTIVE_FOR_RATE = timedelta(minutes=1)

Action = Decision.Action
Via = Decision.Via
LINK_ACTIONS = frozenset({Action.ACCEPT, Action.RELINK, Action.NIL})
NOT_JUDGEMENTS = frozenset({Via.AUTO, Via.PROPAGATED})

__all__ = [
    "IDLE_CUTOFF", "MIN_ACTIVE_FOR_RATE", "BreakdownRow", "CuratorRow", "Figures", "MemberRow", "ProjectStats",
    "WorkbenchStats", "curator_stats", "format_duration", "format_seconds", "project_stats", "summarise",
]


class Row(NamedTuple):
    """One decision as the statistics read it."""

    user_id: int
    username: str
    created_at: datetime
    action: str
    via: str
    rank: int | None
    model_version: str
    time_on_task_ms: int | None
    project_id: int | None  # the project whose annotator's copy the decision is on; None elsewhere
    document_id: int
    collection_id: int


_FIELDS = ("user_id", "user__username", "created_at", "action", "via", "rank", "model_version", "time_on_task_ms",
           "document__assignment__project_id", "document_id", "document__collection_id")


def _rows(decisions: QuerySet[Decision]) -> list[Row]:
    return [Row(*values) for values in decisions.filter(undone_at__isnull=True).order_by("user_id", "created_at", "id").values_list(*_FIELDS)]


# --- figures ---------------------------------------------------------------------------------------------------


def format_duration(seconds: float) -> str:
    """An active time for people: "35 s", "12 min", "3 h 05 min"."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = int(seconds // 60)
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def format_seconds(seconds: float | None) -> str:
    """A time on task: "4.2 s", "2.5 min"; "—" when none was recorded."""
    if seconds is None:
        return "—"
    if seconds < 60:
        return f"{seconds:.1f} s"
    return f"{seconds / 60:.1f} min"


@dataclass(frozen=True)
class Figures:
    """What one curator (or a group of them) did, per the module's definitions."""

    decisions: int = 0  # curator judgements: not auto-accepted, not propagated
    propagated: int = 0
    auto: int = 0
    active_seconds: float = 0.0
    timed: int = 0  # judgements with a recorded time on task
    median_seconds: float | None = None
    p90_seconds: float | None = None
    top1: int = 0  # link decisions on a model's suggestions that took its first
    top1_of: int = 0  # link decisions on a model's suggestions
    first_at: datetime | None = None
    last_at: datetime | None = None
    actions: dict[str, int] = field(default_factory=dict)

    @property
    def by_a_curator(self) -> bool:
        """Any decision of a curator's: not only the linker's account auto-accepting."""
        return bool(self.decisions or self.propagated)

    @property
    def per_hour(self) -> float | None:
        if self.active_seconds < MIN_ACTIVE_FOR_RATE.total_seconds():
            return None
        return self.decisions / (self.active_seconds / 3600)

    @property
    def top1_share(self) -> float | None:
        return self.top1 / self.top1_of if self.top1_of else None

    # For the templates: numbers as people read them.
    @property
    def per_hour_text(self) -> str:
        rate = self.per_hour
        return "—" if rate is None else f"{rate:.1f} / h"

    @property
    def active_text(self) -> str:
        return format_duration(self.active_seconds) if self.decisions else "—"

    @property
    def median_text(self) -> str:
        return format_seconds(self.median_seconds)

    @property
    def p90_text(self) -> str:
        return format_seconds(self.p90_seconds)

    @property
    def top1_text(self) -> str:
        share = self.top1_share
        return "—" if share is None else f"{share * 100:.0f} %"


def _percentile(ordered: Sequence[float], share: float) -> float:
    """Nearest-rank percentile of sorted values: a value that was observed, never an interpolation."""
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def _active_seconds(judgements: Iterable[Row]) -> float:
    """Active time of one curator's judgements in time order (the module's docstring says how)."""
    cutoff = IDLE_CUTOFF.total_seconds()
    total = 0.0
    previous: datetime | None = None
    for row in judgements:
        gap = (row.created_at - previous).total_seconds() if previous is not None else None
        if gap is not None and gap <= cutoff:
            total += gap
        elif row.time_on_task_ms is not None:
            total += min(row.time_on_task_ms / 1000, cutoff)
        previous = row.created_at
    return total


def _on_suggestions(row: Row) -> bool:
    return row.action in LINK_ACTIONS and (bool(row.model_version) or row.rank is not None)


def summarise(rows: Iterable[Row]) -> Figures:
    """The figures of decisions of one or more curators, ordered by curator and time (active time is summed
    over the curators: person-hours)."""
    judgements: list[Row] = []
    not_judged: Counter[str] = Counter()
    for row in rows:
        if row.via in NOT_JUDGEMENTS:
            not_judged[row.via] += 1
        else:
            judgements.append(row)
    by_user: dict[int, list[Row]] = defaultdict(list)
    for row in judgements:
        by_user[row.user_id].append(row)
    times = sorted(row.time_on_task_ms / 1000 for row in judgements if row.time_on_task_ms is not None)
    linked = [row for row in judgements if _on_suggestions(row)]
    return Figures(
        decisions=len(judgements),
        propagated=not_judged[Via.PROPAGATED],
        auto=not_judged[Via.AUTO],
        active_seconds=sum(_active_seconds(user_rows) for user_rows in by_user.values()),
        timed=len(times),
        median_seconds=median(times) if times else None,
        p90_seconds=_percentile(times, 0.9) if times else None,
        top1=sum(1 for row in linked if row.rank == 1),
        top1_of=len(linked),
        first_at=min((row.created_at for row in judgements), default=None),
        last_at=max((row.created_at for row in judgements), default=None),
        actions=dict(Counter(row.action for row in judgements)),
    )


# --- one project -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemberRow:
    user_id: int
    username: str
    roles: tuple[str, ...]  # role labels; empty: decided in the project without being a member (an admin)
    figures: Figures
    assigned: int  # assignments (document copies) of the annotator
    done: int

    @property
    def percent_done(self) -> int:
        return int(self.done * 100 / self.assigned) if self.assigned else 0


@dataclass(frozen=True)
class ProjectStats:
    project: Project
    rows: list[MemberRow]
    total: Figures | None  # None when the figures were asked for one curator only
    assigned: int
    done: int

    @property
    def percent_done(self) -> int:
        return int(self.done * 100 / self.assigned) if self.assigned else 0

    @property
    def any_decision(self) -> bool:
        return any(row.figures.by_a_curator for row in self.rows)


def project_decisions(project: Project) -> QuerySet[Decision]:
    """The project's decisions: on its annotators' copies, and the adjudications on its own documents (those of
    its document subset, or of its collection where it has none)."""
    adjudicated = Q(via=Via.ADJUDICATION, document__in=project_documents(project))
    return Decision.objects.filter(Q(document__assignment__project=project) | adjudicated)


def project_stats(project: Project, only_user_id: int | None = None) -> ProjectStats:
    """One row per member (and per anybody else who decided in the project), with the annotators' progress, and
    the project's total; ``only_user_id``: that curator's row alone and no total (what an annotator may see)."""
    decisions = project_decisions(project)
    members = Member.objects.filter(project=project)
    assignments = Assignment.objects.filter(project=project)
    if only_user_id is not None:
        decisions = decisions.filter(user_id=only_user_id)
        members = members.filter(user_id=only_user_id)
        assignments = assignments.filter(annotator_id=only_user_id)
    rows = _rows(decisions)
    by_user: dict[int, list[Row]] = defaultdict(list)
    for row in rows:
        by_user[row.user_id].append(row)
    names: dict[int, str] = {row.user_id: row.username for row in rows}
    labels = dict(Member.Role.choices)
    roles: dict[int, list[str]] = defaultdict(list)
    for user_id, username, role in members.order_by("role").values_list("user_id", "user__username", "role"):
        names[user_id] = username
        roles[user_id].append(labels.get(role, role))
    progress: dict[int, Counter[str]] = defaultdict(Counter)
    for user_id, username, state, n in (
        assignments.values_list("annotator_id", "annotator__username", "state").annotate(n=Count("id")).order_by()
    ):
        names[user_id] = username
        progress[user_id][state] = n
    out = []
    for user_id, username in sorted(names.items(), key=lambda item: item[1].lower()):
        figures = summarise(by_user.get(user_id, ()))
        if user_id in roles or user_id in progress or figures.by_a_curator:
            out.append(MemberRow(user_id, username, tuple(roles.get(user_id, ())), figures,
                                 sum(progress[user_id].values()), progress[user_id][Assignment.State.DONE]))
    return ProjectStats(
        project=project,
        rows=out,
        total=None if only_user_id is not None else summarise(rows),
        assigned=sum(row.assigned for row in out),
        done=sum(row.done for row in out),
    )


# --- the whole workbench ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CuratorRow:
    user_id: int
    username: str
    figures: Figures
    projects: int  # projects the curator decided in


@dataclass(frozen=True)
class BreakdownRow:
    project: Project
    user_id: int
    username: str
    figures: Figures


@dataclass(frozen=True)
class WorkbenchStats:
    curators: list[CuratorRow]  # everybody with a curator judgement or a propagated decision
    total: Figures  # its ``auto``: the linker's auto-accepts
    breakdown: list[BreakdownRow]  # curator × project, by project then curator


def _adjudicated_projects(projects: Sequence[Project]) -> dict[int, list[tuple[Project, frozenset[int] | None]]]:
    """Per collection, its projects and their document subsets (None: all the collection's documents)."""
    subsets: dict[int, set[int]] = defaultdict(set)
    for project_id, document_id in Project.documents.through.objects.filter(project__in=projects).values_list("project_id", "document_id"):
        subsets[project_id].add(document_id)
    by_collection: dict[int, list[tuple[Project, frozenset[int] | None]]] = defaultdict(list)
    for project in projects:
        subset = subsets.get(project.pk)
        by_collection[project.collection_id].append((project, frozenset(subset) if subset else None))
    return by_collection


def curator_stats() -> WorkbenchStats:
    """Every curator over all their decisions, and each curator's figures in each project."""
    rows = _rows(Decision.objects.all())
    projects = list(Project.objects.all())
    by_pk = {project.pk: project for project in projects}
    adjudicated = _adjudicated_projects(projects)
    by_user: dict[int, list[Row]] = defaultdict(list)
    by_project_user: dict[tuple[int, int], list[Row]] = defaultdict(list)
    for row in rows:
        by_user[row.user_id].append(row)
        if row.project_id is not None:
            by_project_user[(row.project_id, row.user_id)].append(row)
        elif row.via == Via.ADJUDICATION:
            for project, subset in adjudicated.get(row.collection_id, ()):
                if subset is None or row.document_id in subset:
                    by_project_user[(project.pk, row.user_id)].append(row)
    names = {row.user_id: row.username for row in rows}
    breakdown: list[BreakdownRow] = []
    for (project_id, user_id), project_rows in by_project_user.items():
        figures = summarise(project_rows)
        if figures.by_a_curator:
            breakdown.append(BreakdownRow(by_pk[project_id], user_id, names[user_id], figures))
    projects_of = Counter(row.user_id for row in breakdown)
    curators: list[CuratorRow] = []
    for user_id, user_rows in by_user.items():
        figures = summarise(user_rows)
        if figures.by_a_curator:
            curators.append(CuratorRow(user_id, names[user_id], figures, projects_of[user_id]))
    curators.sort(key=lambda row: row.username.lower())
    breakdown.sort(key=lambda row: (row.project.slug, row.username.lower()))
    return WorkbenchStats(curators, summarise(rows), breakdown)
