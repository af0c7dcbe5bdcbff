"""Admin pages for training: the runs (with Acc@1/Acc@5), starting one, its live progress, cancel, promote.

A run's page says what a person needs to trust its figures: its parameters as resolved for the device its
worker recorded (defaults marked), where it trains, its loss from the first report, and whether it was
evaluated on data it was trained on (:mod:`webapp.training.held_out`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from webapp.core.decorators import admin_required
from webapp.core.queue import QueueUnavailable
from webapp.corpus.models import Collection
from webapp.linking.models import DetectorVersion, IndexVersion
from webapp.training.base_encoders import started_from
from webapp.training.calibration import LINKER_METHODS, nil_decisions
from webapp.training.errors import RunError
from webapp.training.evaluation import evaluable_collections, start_evaluation
from webapp.training.gate import GateRefused, promote_through_gate
from webapp.training.held_out import index_overlap, run_overlap, trained_collections
from webapp.training.hierarchy_inputs import run_dictionaries
from webapp.training.hierarchy_report import hierarchy_report
from webapp.training.job_caps import JobCapReached
from webapp.training.loop_views import loop_rows, refusal_message
from webapp.training.models import Evaluation, TrainingRun, WordVectorModel
from webapp.training.param_table import parameter_rows
from webapp.training.run_form import StartRunForm
from webapp.training.run_phases import run_phases, time_left
from webapp.training.runs import cancel_run, start_run
from webapp.training.services import ActivationError
from webapp.training.word_vectors import encoder_scores
from webapp.training.workers import device_text, placement
from webapp.vocab.models import Dictionary

CURVE_WIDTH, CURVE_HEIGHT = 640, 200
# The plot's box inside the chart: room on the left for the loss labels, below for the step labels.
PLOT_LEFT, PLOT_RIGHT, PLOT_TOP, PLOT_BOTTOM = 64, 12, 12, 28
DOTS_UP_TO = 40  # reports drawn as dots too (a curve of one report is a dot)
METRIC_LABELS = {"acc@1": "Acc@1", "acc@5": "Acc@5", "mrr": "MRR", "mentions": "Mentions"}
# A tagger's figures are about spans, not links: exact spans first, then overlapping ones.
SPAN_LABELS = {"precision": "Precision", "recall": "Recall", "f1": "F1", "precision_overlap": "Precision (overlap)",
               "recall_overlap": "Recall (overlap)", "f1_overlap": "F1 (overlap)"}
SPAN_COUNTS = {"gold": "Gold spans", "predicted": "Spans found", "documents": "Documents"}


@dataclass(frozen=True)
class PhaseLoss:
    phase: str
    n: int
    first: float
    last: float


@dataclass(frozen=True)
class LossCurve:
    """An inline SVG chart of a run's loss in its latest training phase (earlier phases summed up in ``before``)."""

    points: str
    dots: list[tuple[float, float]]
    phase: str
    first: float
    last: float
    low: float
    high: float
    n: int
    axis_low: float  # the y axis's range: from 0 for losses (see loss_axis), so that noise looks like noise
    axis_high: float
    x_first: str  # the first report's step ("step 1"), the last one's
    x_last: str
    before: list[PhaseLoss] = field(default_factory=list)
    width: int = CURVE_WIDTH
    height: int = CURVE_HEIGHT
    left: int = PLOT_LEFT
    right: int = CURVE_WIDTH - PLOT_RIGHT
    top: int = PLOT_TOP
    bottom: int = CURVE_HEIGHT - PLOT_BOTTOM

    @property
    def middle(self) -> float:
        return (self.top + self.bottom) / 2


def loss_curve(history: list[dict[str, Any]], width: int = CURVE_WIDTH, height: int = CURVE_HEIGHT) -> LossCurve | None:
    """The chart of the latest phase's losses from its first report on (one report: a dot); None before any."""
    if not history:
        return None
    phases: dict[str, list[dict[str, Any]]] = {}
    for p in history:
        phases.setdefault(str(p.get("phase", "")), []).append(p)
    phase = str(history[-1].get("phase", ""))
    reports = phases.pop(phase)
    values = [float(p["loss"]) for p in reports]
    low, high = min(values), max(values)
    axis_low, axis_high = loss_axis(low, high)
    span = axis_high - axis_low
    left, right, top, bottom = PLOT_LEFT, width - PLOT_RIGHT, PLOT_TOP, height - PLOT_BOTTOM
    step_x = (right - left) / max(len(values) - 1, 1)
    xy = [(left + i * step_x if len(values) > 1 else (left + right) / 2,
           bottom - (bottom - top) * (v - axis_low) / span) for i, v in enumerate(values)]
    steps = [int(p.get("step", 0)) for p in reports]
    if steps == sorted(steps) and steps[-1] > 0:
        x_first, x_last = f"step {steps[0]:,}", f"step {steps[-1]:,}"
    else:
        x_first, x_last = "report 1", f"report {len(values):,}"
    before = [PhaseLoss(name, len(ps), float(ps[0]["loss"]), float(ps[-1]["loss"])) for name, ps in phases.items()]
    return LossCurve(
        points=" ".join(f"{x:.1f},{y:.1f}" for x, y in xy),
        dots=[(round(x, 1), round(y, 1)) for x, y in (xy if len(xy) <= DOTS_UP_TO else xy[-1:])],
        phase=phase, first=values[0], last=values[-1], low=low, high=high, n=len(values),
        axis_low=axis_low, axis_high=axis_high,
        x_first=x_first, x_last=x_last, before=before, width=width, height=height,
        left=left, right=right, top=top, bottom=bottom,
    )


def loss_axis(low: float, high: float) -> tuple[float, float]:
    """The y axis's range for losses from ``low`` to ``high``: from 0 when none is negative (a loss of 0.809-0.821
    zoomed to fill the chart made 1 % noise look like a dramatic V); otherwise the values padded by a tenth of their
    span. Never an empty range (a flat curve sits in the middle of one)."""
    if low >= 0:
        return 0.0, high if high > 0 else 1.0
    pad = (high - low) / 10 or abs(low) / 10
    return low - pad, high + pad


def metric_cards(metrics: dict[str, Any]) -> list[tuple[str, str]]:
    """A run's evaluation figures as (label, value) cards: Acc@1, Acc@5, MRR, then the mentions counted once
    (the linker's ``n`` and the workbench's ``mentions`` are the same count), then anything else."""
    cards = []
    for key, label in METRIC_LABELS.items():
        value = metrics.get(key, metrics.get("n") if key == "mentions" else None)
        if value is not None:
            cards.append((label, f"{float(value):,.0f}" if key == "mentions" else f"{float(value):.3f}"))
    for key, value in metrics.items():
        if key not in METRIC_LABELS and key != "n" and not key.startswith("n/") and isinstance(value, (int, float)):
            cards.append((key, f"{float(value):.3f}"))
    return cards


def span_cards(metrics: dict[str, Any]) -> list[tuple[str, str]]:
    """A tagger run's evaluation figures as (label, value) cards: precision, recall and F1 of exact spans, then of
    overlapping spans, then the counts they were measured on."""
    cards = [(label, f"{float(metrics[key]):.3f}") for key, label in SPAN_LABELS.items()
             if isinstance(metrics.get(key), (int, float))]
    cards += [(label, f"{float(metrics[key]):,.0f}") for key, label in SPAN_COUNTS.items()
              if isinstance(metrics.get(key), (int, float))]
    return cards


@require_GET
@admin_required
def run_list(request: HttpRequest) -> HttpResponse:
    runs = (TrainingRun.objects.select_related("dictionary", "encoder", "index_version", "eval_collection", "created_by",
                                               "detector_version")
            .prefetch_related("collections"))
    rows = [(run, run.metrics.get("acc@1"), run.metrics.get("acc@5"),
             run.eval_collection_id in {c.pk for c in run.collections.all()}) for run in runs[:200]]
    return render(request, "training/run_list.html", {"rows": rows, "loop_rows": loop_rows()})


@require_http_methods(["GET", "POST"])
@admin_required
def run_start(request: HttpRequest) -> HttpResponse:
    # A GET may preselect fields (?method=biosyn&base_encoder=NAME: "start a BioSyn run from this encoder").
    form = StartRunForm(request.POST or None, initial=request.GET.dict())
    status = 200
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            run = start_run(data["dictionary"], form.run_collections(), form.params(), base_model=data["base_model"],
                            eval_collection=data["eval_collection"], user=request.user,
                            base_encoder=data["base_encoder"], extra_dictionaries=data["extra_dictionaries"],
                            word_vectors=form.run_word_vectors())
        except JobCapReached as exc:  # too many of this admin's runs under way: nothing was created
            form.add_error(None, str(exc))
            status = 429
        except RunError as exc:
            form.add_error(None, str(exc))
        except QueueUnavailable as exc:  # the run was created and failed with this reason: nothing will run it
            form.add_error(None, str(exc))
            status = 503
        else:
            messages.success(request, f"Training run {run.pk} queued.")
            return redirect("training:detail", pk=run.pk)
    if form.errors and status == 200:
        status = 400
    # Where it will train: asked of the broker on a plain GET only (a POST answered 503 has no broker to ask).
    where = placement(lead="Runs go to the {queue} queue") if request.method == "GET" else None
    return render(request, "training/run_start.html", {"form": form, "placement": where}, status=status)


@require_GET
@admin_required
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(
        TrainingRun.objects.select_related("dictionary", "encoder", "index_version", "eval_collection", "created_by",
                                           "word_vectors", "index_version__encoder", "detector_version"), pk=pk
    )
    index = run.index_version
    evaluations = (
        [(e, index_overlap(index, e.collection))
         for e in Evaluation.objects.filter(index_version=index).select_related("collection")]
        if index is not None else []
    )
    template = "training/run_detail.html"
    if request.htmx and not request.htmx.history_restore_request and request.htmx.target == "run-progress":
        template += "#run-progress"
    queued = run.state == TrainingRun.State.QUEUED
    where = placement(str(run.params.get("device", ""))) if queued else None
    # The device it trains on: recorded by its worker; while queued, the CPU where no worker has a GPU.
    device = run.device or ("cpu" if where is not None and where.cpu else "")
    trained_on = {c.pk for c in trained_collections(index.encoder)} if index is not None else set()
    gold = [(c, c.pk in trained_on) for c in evaluable_collections(run.dictionary)]
    base_encoder = started_from(run.base_model)
    phases = run_phases(run)
    context = {
        "phases": phases,
        "running_phase": next((p for p in phases if p.state == "running"), None),
        "phases_after": [p for p in phases if p.state == "waiting"] if run.state == TrainingRun.State.RUNNING else [],
        "time_left": time_left(phases),
        "run": run,
        "hierarchy": hierarchy_report(run.encoder, run.metrics),
        "trained_dictionaries": run_dictionaries(run, strict=False) if run.method == "hiprbert" else [],
        "trained_vectors": WordVectorModel.objects.filter(run=run).first() if run.method == "fasttext" else None,
        "encoder_scores": encoder_scores(run.encoder.config) if run.encoder and run.method in ("bne", "dan") else None,
        "dan_hierarchy": Dictionary.objects.filter(pk=run.params.get("hierarchy") or run.dictionary_id).first()
        if run.method == "dan" and run.params.get("level") else None,
        "base_encoder": base_encoder,
        "curve": loss_curve(run.loss_history),
        "percent": round(100 * run.fraction),
        "collections": run.collections.all(),
        "examples": run.examples.count(),
        "curator_examples": run.examples.filter(source="curator", negative=False).count(),
        "negatives": run.examples.filter(negative=True).count(),
        "nil_decisions": len(nil_decisions(run)) if run.method in LINKER_METHODS else 0,
        "calibration": (run.encoder.config or {}).get("calibration") if run.encoder is not None else None,
        "evaluations": evaluations,
        "pending": not run.is_finished or any(e.state in ("queued", "running") for e, _ in evaluations),
        "gold_collections": gold,
        "held_out_collections": [c for c, trained in gold if not trained],
        "device_text": device_text(run),
        "placement": where,
        "parameters": parameter_rows(run.method, run.params, device, _param_names(run),
                                     hierarchy_base=base_encoder is not None),
        "metric_cards": span_cards(run.metrics) if run.method == TrainingRun.Method.TAGGER else metric_cards(run.metrics),
        "detector": DetectorVersion.objects.filter(run=run).first() if run.method == TrainingRun.Method.TAGGER else None,
        "overlap": run_overlap(run) if run.metrics else None,
    }
    return render(request, template, context)


def _param_names(run: TrainingRun) -> dict[str, dict[int, str]]:
    """The dictionaries a run's params name by id (HiPrBERT's sources, DAN's hierarchy), by slug."""
    ids = [*run.params.get("dictionaries", ()), run.params.get("hierarchy") or 0]
    return {"dictionary": dict(Dictionary.objects.filter(pk__in=[i for i in ids if i]).values_list("pk", "slug"))}


@require_POST
@admin_required
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    get_object_or_404(TrainingRun, pk=pk)
    run = cancel_run(pk, user=request.user)
    if run.state == TrainingRun.State.CANCELLED:
        messages.success(request, f"Training run {pk} cancelled.")
    elif run.state == TrainingRun.State.RUNNING:
        messages.success(request, f"Training run {pk} stops at its next progress report.")
    else:
        messages.warning(request, f"Training run {pk} already {run.get_state_display().lower()}.")
    return redirect("training:detail", pk=pk)


@require_POST
@admin_required
def index_promote(request: HttpRequest, pk: int) -> HttpResponse:
    index = get_object_or_404(IndexVersion, pk=pk)
    try:  # below its dictionary's promotion gate an index is refused, with the gate's reasons (webapp.training.gate)
        index, _ = promote_through_gate(index.pk, user=request.user)
    except GateRefused as exc:
        messages.error(request, refusal_message(index.label, exc))
    except ActivationError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{index.label} now serves {index.dictionary}.")
    back = request.POST.get("next", "")
    return redirect(back if back.startswith("/training/") else "training:list")


@require_POST
@admin_required
def index_evaluate(request: HttpRequest, pk: int) -> HttpResponse:
    """Queue an evaluation of an index version on the chosen gold collection."""
    index = get_object_or_404(IndexVersion, pk=pk)
    collection = Collection.objects.filter(slug=request.POST.get("collection", ""), has_gold=True).first()
    if collection is None:
        messages.error(request, "Choose a gold collection to evaluate on.")
    else:
        try:
            start_evaluation(index, collection, user=request.user)
        except (RunError, QueueUnavailable) as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"Evaluating index {index.pk} on {collection} in the background.")
    back = request.POST.get("next", "")
    return redirect(back if back.startswith("/training/") else "training:list")
