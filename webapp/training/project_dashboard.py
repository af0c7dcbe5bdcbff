"""A project's dashboard (/projects/<slug>/dashboard/): the team's state first (each curator's pace and agreement,
each collection's done, contested and waiting documents), then agreement and the model's Acc@1 on the project's
gold over time in one chart.

It is training's because it reads both the team's figures (:mod:`webapp.teamwork.dashboard`, a layer below) and
the evaluations of index versions (training's); the address sits with the project's other pages, in the
"projects" namespace (webapp.urls). Any member may open it, as the statistics page: managers and adjudicators see
everyone, an annotator their own row and no agreement (double annotation is blind).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import path
from django.views.decorators.http import require_GET

from webapp.core.decorators import reader_required
from webapp.projects import access
from webapp.projects.models import Member, Project
from webapp.teamwork import stats
from webapp.teamwork.dashboard import AgreementPoint, team_board
from webapp.training.models import Evaluation
from webapp.training.time_chart import Point, Series, TimeChart, as_datetime, time_chart


@dataclass(frozen=True)
class GoldFigure:
    """One succeeded evaluation of an index version on the project's collection (its gold)."""

    evaluation: Evaluation

    @property
    def acc1(self) -> float | None:
        value = self.evaluation.acc1
        return float(value) if isinstance(value, (int, float)) else None

    @property
    def mentions(self) -> int | None:
        value = self.evaluation.metrics.get("mentions", self.evaluation.metrics.get("n"))
        return int(value) if isinstance(value, (int, float)) else None


def gold_history(project: Project, user: object) -> list[GoldFigure]:
    """The project's gold evaluations the user may read (the one rule: access.scope), oldest first."""
    evaluations = access.scope(Evaluation.objects.filter(collection=project.collection,
                                                          state=Evaluation.State.SUCCEEDED), user)
    rows = evaluations.select_related("index_version__dictionary", "index_version__dictionary_version",
                                      "index_version__encoder").order_by("finished_at", "pk")
    return [GoldFigure(e) for e in rows if isinstance(e.acc1, (int, float))]


def _chart(series: list[AgreementPoint], period: str, gold: list[GoldFigure]) -> TimeChart | None:
    span = "day" if period == "day" else "week of"
    agreement = [Point(as_datetime(p.start), p.alpha,
                       f"Krippendorff's α {p.alpha:.2f} on {p.units} spans of {p.documents} document"
                       f"{'s' if p.documents != 1 else ''} finished in the {span} {p.start:%Y-%m-%d}")
                 for p in series if p.alpha is not None]
    acc = [Point(g.evaluation.finished_at or g.evaluation.created_at, g.acc1 or 0.0,
                 f"Acc@1 {g.acc1:.3f} of {g.evaluation.index_version.label}"
                 f"{f' on {g.mentions} mentions' if g.mentions is not None else ''}, "
                 f"{(g.evaluation.finished_at or g.evaluation.created_at):%Y-%m-%d %H:%M}") for g in gold]
    return time_chart([Series(f"Agreement (Krippendorff's α per {period})", "agreement", agreement),
                       Series("Model Acc@1 on the gold, per evaluation", "acc1", acc)])


@require_GET
@reader_required
def project_dashboard(request: HttpRequest, slug: str) -> HttpResponse:
    project = access.project_for(request.user, slug)
    sees_all = access.has_role(request.user, project, Member.Role.MANAGER, Member.Role.ADJUDICATOR)
    board = team_board(project, sees_all, int(request.user.pk or 0))
    gold = gold_history(project, request.user)
    return render(request, "projects/dashboard.html", {
        "project": project, "board": board, "sees_all": sees_all, "gold": gold, "latest_gold": gold[-1] if gold else None,
        "chart": _chart(board.series, board.period, gold), "unmeasured_periods": sum(1 for p in board.series if p.alpha is None),
        "idle_cutoff_minutes": int(stats.IDLE_CUTOFF.total_seconds() // 60),
        "min_active_seconds": int(stats.MIN_ACTIVE_FOR_RATE.total_seconds()),
    })


urlpatterns = [path("<slug:slug>/dashboard/", project_dashboard, name="dashboard")]
