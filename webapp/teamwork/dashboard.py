"""The team's figures on a project's dashboard: where each document stands (done, contested, waiting) per
collection, each curator's pace and agreement with the others, and agreement over time.

Nothing here is counted anew: pace is :mod:`webapp.teamwork.stats` (decisions per hour of active time, gaps over
its idle cut-off left out), agreement is :mod:`webapp.teamwork.agreement` (Cohen's kappa per pair, Krippendorff's
alpha for the team, from :mod:`linker.agreement`), computed on the same compared documents the agreement page uses.

**Where a document stands.** *Waiting*: fewer of its annotators have marked it done than the project asks for
(``annotators_per_document``), including documents nobody is assigned yet. *Contested*: enough annotators are done
and at least one span has labels that differ and no adjudication yet. *Done*: enough annotators are done and no
span is open (agreed spans may still wait to be applied on the adjudication page).

**Agreement over time.** The compared documents are grouped by the day (or, over more than
:data:`DAYS_BY_DAY` days, the ISO week) in which their last annotator finished, and the team's figures are computed
on each group alone: how agreement moves, not a running average that hides a bad week.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, timedelta

from linker.agreement import AgreementReport
from webapp.corpus.models import Collection
from webapp.projects.models import Assignment, Project
from webapp.projects.selectors import document_progress, project_documents
from webapp.teamwork.agreement import (
    ComparedDocument,
    ProjectAgreement,
    compared_documents,
    project_agreement,
    project_hierarchy,
    team_report,
)
from webapp.teamwork.stats import MemberRow, ProjectStats, project_stats

DAYS_BY_DAY = 31  # up to this many days between the first and the last finished document: one point a day

__all__ = ["DAYS_BY_DAY", "AgreementPoint", "CollectionProgress", "CuratorLine", "TeamBoard", "team_board"]


@dataclass(frozen=True)
class CollectionProgress:
    collection: Collection
    documents: int
    done: int
    contested: int
    waiting: int
    unassigned: int  # of the waiting ones: no annotator yet
    open_spans: int  # spans of the contested documents awaiting adjudication

    def percent(self, count: int) -> float:
        return round(count * 100 / self.documents, 1) if self.documents else 0.0

    @property
    def done_percent(self) -> float:
        return self.percent(self.done)

    @property
    def contested_percent(self) -> float:
        return self.percent(self.contested)

    @property
    def waiting_percent(self) -> float:
        return self.percent(self.waiting)


@dataclass(frozen=True)
class CuratorLine:
    """One curator's pace (``member.figures``) and agreement: the mean Cohen's kappa of their pairs (Light's kappa
    for one person), each pair's kappa, and how often their label is the adjudicated one."""

    member: MemberRow
    kappa: float | None = None
    pairs: tuple[tuple[str, float | None], ...] = ()
    with_adjudicated: tuple[int, int] | None = None  # (agreed, spans adjudicated)

    @property
    def adjudicated_rate(self) -> float | None:
        if not self.with_adjudicated or not self.with_adjudicated[1]:
            return None
        return self.with_adjudicated[0] / self.with_adjudicated[1]


@dataclass(frozen=True)
class AgreementPoint:
    start: date  # the day, or the Monday of the week
    documents: int
    units: int
    alpha: float | None
    kappa: float | None


@dataclass
class TeamBoard:
    stats: ProjectStats
    curators: list[CuratorLine]
    collections: list[CollectionProgress]
    agreement: ProjectAgreement | None  # None: the viewer may not see agreement (an annotator)
    series: list[AgreementPoint] = field(default_factory=list)
    period: str = "day"

    @property
    def totals(self) -> CollectionProgress | None:
        """The collections added up (None without documents): the figures the page opens with."""
        if not self.collections:
            return None
        c = self.collections
        return CollectionProgress(c[0].collection, *(sum(getattr(x, name) for x in c) for name in (
            "documents", "done", "contested", "waiting", "unassigned", "open_spans")))


def _collections(project: Project, compared: list[ComparedDocument]) -> list[CollectionProgress]:
    open_spans = {c.document.pk: sum(1 for u in c.units if not u.agreed and not u.resolved) for c in compared}
    needed = project.annotators_per_document
    counts: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    collections: dict[int, Collection] = {}
    for row in document_progress(project, project_documents(project).select_related("collection")):
        collection = row.document.collection
        collections.setdefault(collection.pk, collection)
        tally = counts[collection.pk]
        tally["documents"] += 1
        finished = sum(1 for a in row.assignments if a.state == Assignment.State.DONE)
        if not row.assignments:
            tally["unassigned"] += 1
        if finished < needed or not row.all_done:
            tally["waiting"] += 1
        elif open_spans.get(row.document.pk, 0):
            tally["contested"] += 1
            tally["open_spans"] += open_spans[row.document.pk]
        else:
            tally["done"] += 1
    return [CollectionProgress(collections[pk], t["documents"], t["done"], t["contested"], t["waiting"], t["unassigned"],
                               t["open_spans"]) for pk, t in sorted(counts.items(), key=lambda i: str(collections[i[0]]))]


def _curator_lines(stats: ProjectStats, agreement: ProjectAgreement | None) -> list[CuratorLine]:
    report: AgreementReport | None = agreement.report if agreement else None
    adjudicated = {w.annotator: (w.agreed, w.items) for w in (agreement.with_adjudicated if agreement else ())}
    lines = []
    for member in stats.rows:
        name = member.username
        pairs = tuple((str(p.b if p.a == name else p.a), p.links.kappa)
                      for p in (report.pairs if report else ()) if name in (p.a, p.b))
        kappas = [k for _, k in pairs if k is not None]
        lines.append(CuratorLine(member, sum(kappas) / len(kappas) if kappas else None, pairs, adjudicated.get(name)))
    return lines


def _period_start(day: date, period: str) -> date:
    return day if period == "day" else day - timedelta(days=day.weekday())


def agreement_series(project: Project, compared: list[ComparedDocument]) -> tuple[list[AgreementPoint], str]:
    """The team's agreement per day (or week) in which documents were finished; a period without two annotators'
    labels on a span has no figure but still counts its documents."""
    finished = [c for c in compared if c.completed_at is not None]
    if not finished:
        return [], "day"
    days = sorted(c.completed_at.date() for c in finished if c.completed_at is not None)
    period = "day" if (days[-1] - days[0]).days <= DAYS_BY_DAY else "week"
    groups: dict[date, list[ComparedDocument]] = defaultdict(list)
    for c in finished:
        assert c.completed_at is not None
        groups[_period_start(c.completed_at.date(), period)].append(c)
    hierarchy = project_hierarchy(project)
    points = []
    for start in sorted(groups):
        report = team_report(groups[start], hierarchy)
        units = sum(len(c.units) for c in groups[start])
        points.append(AgreementPoint(start, len(groups[start]), units, report.alpha if report else None,
                                     report.mean_kappa if report else None))
    return points, period


def team_board(project: Project, sees_all: bool, user_id: int) -> TeamBoard:
    """The dashboard's team figures; ``sees_all`` False (an annotator): their own row, no agreement (double
    annotation is blind), the documents' progress as everybody sees it on the project's page."""
    compared, waiting = compared_documents(project)
    stats = project_stats(project, None if sees_all else user_id)
    agreement = project_agreement(project, (compared, waiting)) if sees_all else None
    series, period = agreement_series(project, compared) if sees_all else ([], "day")
    return TeamBoard(stats, _curator_lines(stats, agreement), _collections(project, compared), agreement, series, period)
