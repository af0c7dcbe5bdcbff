"""Admin pages for training: the runs (with Acc@1/Acc@5), starting one, its live progress, cancel, promote."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from webapp.core.decorators import admin_required
from webapp.core.queue import QueueUnavailable
from webapp.corpus.models import Collection
from webapp.training.base_encoders import started_from
from webapp.training.errors import RunError
from webapp.training.evaluation import start_evaluation
from webapp.training.forms import StartRunForm
from webapp.training.hierarchy_inputs import run_dictionaries
from webapp.training.hierarchy_report import hierarchy_report
from webapp.training.models import Evaluation, IndexVersion, TrainingRun, WordVectorModel
from webapp.training.runs import cancel_run, start_run
from webapp.training.services import ActivationError, promote_index
from webapp.training.word_vectors import encoder_scores
from webapp.vocab.models import Dictionary

CURVE_WIDTH, CURVE_HEIGHT = 600, 160


@dataclass(frozen=True)
class LossCurve:
    """An inline SVG polyline of a run's loss (its last training phase), scaled into the view box."""

    points: str
    phase: str
    first: float
    last: float
    low: float
    high: float
    n: int
    width: int = CURVE_WIDTH
    height: int = CURVE_HEIGHT


def loss_curve(history: list[dict[str, Any]], width: int = CURVE_WIDTH, height: int = CURVE_HEIGHT) -> LossCurve | None:
    if not history:
        return None
    phase = str(history[-1].get("phase", ""))
    values = [float(p["loss"]) for p in history if p.get("phase", "") == phase]
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    pad = 6
    step_x = (width - 2 * pad) / max(len(values) - 1, 1)
    points = " ".join(
        f"{pad + i * step_x:.1f},{pad + (height - 2 * pad) * (1 - (v - low) / span):.1f}" for i, v in enumerate(values)
    )
    return LossCurve(points, phase, values[0], values[-1], low, high, len(values), width, height)


@require_GET
@admin_required
def run_list(request: HttpRequest) -> HttpResponse:
    runs = TrainingRun.objects.select_related("dictionary", "encoder", "index_version", "eval_collection", "created_by")
    rows = [(run, run.metrics.get("acc@1"), run.metrics.get("acc@5")) for run in runs[:200]]
    return render(request, "training/run_list.html", {"rows": rows})


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
        except RunError as exc:
            form.add_error(None, str(exc))
        except QueueUnavailable as exc:  # the run was created and failed with this reason: nothing will run it
            form.add_error(None, str(exc))
            status = 503
        else:
            messages.success(request, f"Training run {run.pk} queued on the gpu queue.")
            return redirect("training:detail", pk=run.pk)
    if form.errors and status == 200:
        status = 400
    return render(request, "training/run_start.html", {"form": form}, status=status)


@require_GET
@admin_required
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(
        TrainingRun.objects.select_related("dictionary", "encoder", "index_version", "eval_collection", "created_by",
                                           "word_vectors"), pk=pk
    )
    evaluations = (
        list(Evaluation.objects.filter(index_version_id=run.index_version_id).select_related("collection"))
        if run.index_version_id else []
    )
    template = "training/run_detail.html"
    if request.htmx and not request.htmx.history_restore_request and request.htmx.target == "run-progress":
        template += "#run-progress"
    context = {
        "run": run,
        "hierarchy": hierarchy_report(run.encoder, run.metrics),
        "trained_dictionaries": run_dictionaries(run, strict=False) if run.method == "hiprbert" else [],
        "trained_vectors": WordVectorModel.objects.filter(run=run).first() if run.method == "fasttext" else None,
        "encoder_scores": encoder_scores(run.encoder.config) if run.encoder and run.method in ("bne", "dan") else None,
        "dan_hierarchy": Dictionary.objects.filter(pk=run.params.get("hierarchy") or run.dictionary_id).first()
        if run.method == "dan" and run.params.get("level") else None,
        "base_encoder": started_from(run.base_model),
        "curve": loss_curve(run.loss_history),
        "percent": round(100 * run.fraction),
        "collections": run.collections.all(),
        "examples": run.examples.count(),
        "curator_examples": run.examples.filter(source="curator", negative=False).count(),
        "negatives": run.examples.filter(negative=True).count(),
        "evaluations": evaluations,
        "pending": not run.is_finished or any(e.state in ("queued", "running") for e in evaluations),
        "gold_collections": Collection.objects.filter(has_gold=True).order_by("slug"),
    }
    return render(request, template, context)


@require_POST
@admin_required
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    get_object_or_404(TrainingRun, pk=pk)
    run = cancel_run(pk)
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
    try:
        index = promote_index(index.pk)
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
