"""Admin pages for the models: each dictionary's active index, its re-ranker's latent types, the index versions with
the form that builds one (any encoder, an optional BNE/DAN first stage, activated when built) and a live card per
build (phase, names encoded of all, names/s, time left, Cancel; then the re-linking of the open mentions), the base
encoders (hierarchy pre-training) with the index versions built from them, the trained encoders by kind, the word
vectors (fastText runs' and uploaded files) that BNE and DAN runs start from, and the mention detectors (tagger runs'),
with their span figures and the switch that makes one the active detector of its dictionary.

Cards poll while there is something to wait for and stop with HTTP 286 (as the imports page does); the last answer
also tells the page (``HX-Trigger: index-build-ended``) to refresh its active models and its list of index versions."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseStopPolling

from webapp.core.decorators import admin_required, reader_required
from webapp.core.queue import QueueUnavailable
from webapp.corpus.models import Collection
from webapp.linking.models import DetectorVersion, EncoderModel, IndexVersion
from webapp.projects import access
from webapp.training.base_encoders import base_encoder_rows
from webapp.training.detectors import DetectorActivationError, activate_detector, retire_detector
from webapp.training.errors import RunError
from webapp.training.forms import IndexBuildForm, WordVectorUploadForm
from webapp.training.index_builds import IndexBuildError
from webapp.training.index_progress import duration
from webapp.training.job_caps import JobCapReached
from webapp.training.latent import active_models, latent_types
from webapp.training.relinking import collection_linking, relinking, watching
from webapp.training.services import cancel_index_build, queue_index_build
from webapp.training.word_vectors import (
    SYNC_LIMIT_BYTES,
    recent_uploads,
    upload_word_vectors,
    word_vector_rows,
)
from webapp.vocab.models import Dictionary

LATENT_TYPES_PER_PAGE = 100
TRAINED_ENCODERS = 30
INDEX_VERSIONS = 20
DETECTOR_VERSIONS = 30
# A build's card stays on the models page this long after it ended (its outcome, the re-linking).
RECENT_BUILD = timedelta(minutes=10)
# A build activated when built is READY for the moment its task takes to activate it.
ACTIVATION_GRACE = timedelta(minutes=2)
SILENT_AFTER_S = 30
BUILD_CARD = "training/_index_build.html"
LINKING_NOTE = "training/_index_linking.html"


def _build_card(index: IndexVersion) -> dict[str, Any]:
    """What a build's card shows: the index, its rate and time left, the re-linking once active, and whether the card
    should look again (``polls``)."""
    now = timezone.now()
    relinked = relinking(index) if index.state == IndexVersion.State.ACTIVE else None
    activating = (index.state == IndexVersion.State.READY and index.activate_when_built and not index.cancel_requested
                  and index.finished_at is not None and now - index.finished_at < ACTIVATION_GRACE)
    polls = (index.state == IndexVersion.State.BUILDING or activating
             or (relinked is not None and watching(index) and not all(r.done for r in relinked)))
    rate, left, running = index.names_per_second, index.seconds_left, index.running_seconds
    # In a phase that counts names the builder reports every batch, a second or two apart: a long silence is news.
    silent = (now - index.progress_at).total_seconds() if index.is_counting and index.progress_at else 0.0
    ended = index.state in (IndexVersion.State.FAILED, IndexVersion.State.CANCELLED)
    serving = (IndexVersion.objects.filter(dictionary_id=index.dictionary_id, state=IndexVersion.State.ACTIVE)
               .values_list("pk", flat=True).first() if ended else None)
    return {
        "index": index, "polls": polls, "activating": activating, "relinking": relinked, "serving": serving,
        "silent": duration(silent) if silent >= SILENT_AFTER_S else "",
        "relinking_done": relinked is not None and all(r.done for r in relinked),
        "rate": round(rate) if rate is not None else None,
        "left": duration(left) if left is not None else "",
        "running": duration(running) if running is not None else "",
        "built_in": duration(index.build_seconds) if index.build_seconds is not None else "",
    }


def _builds_shown() -> list[IndexVersion]:
    """The cards of the models page: builds going on, and those that ended lately."""
    recent = Q(state=IndexVersion.State.BUILDING) | Q(finished_at__gte=timezone.now() - RECENT_BUILD)
    return list(IndexVersion.objects.filter(recent).select_related("dictionary", "dictionary_version", "encoder", "first_stage")
                .order_by("-created_at", "-id")[:INDEX_VERSIONS])


def _models_page(request: HttpRequest, upload_form: WordVectorUploadForm | None = None,
                 build_form: IndexBuildForm | None = None, status: int = 200) -> HttpResponse:
    template = "training/model_list.html"
    target = request.htmx.target if request.htmx else None
    if build_form is None and target in (None, "index-build"):
        # The build form re-rendered for the dictionary and encoder chosen (htmx), or the newest fitting ones.
        build_form = IndexBuildForm.for_choice(request.GET.get("dictionary"), request.GET.get("encoder"))
    if target == "index-build":
        return render(request, template + "#index-build", {"build_form": build_form}, status=status)
    if target == "active-models":  # refreshed once a build's card says it ended
        return render(request, template + "#active-models", {"models": active_models()}, status=status)
    indexes = list(IndexVersion.objects.select_related("dictionary", "dictionary_version", "encoder", "first_stage")
                   .order_by("-created_at", "-id")[:INDEX_VERSIONS])
    context: dict[str, Any] = {"indexes": indexes}
    if target == "index-version-list":  # refreshed once a build's card says it ended
        return render(request, template + "#index-version-list", context, status=status)
    context["builds"] = [_build_card(index) for index in _builds_shown()]
    uploads = list(recent_uploads())
    if target == "word-vector-uploads":
        template += "#word-vector-uploads"
    context |= {
        "models": active_models(), "base_encoders": base_encoder_rows(),
        "dictionaries": Dictionary.objects.order_by("slug"),
        "trained_encoders": EncoderModel.objects.exclude(method=EncoderModel.Method.HIPRBERT)
        .select_related("parent").prefetch_related("training_runs", "index_versions")[:TRAINED_ENCODERS],
        "word_vectors": word_vector_rows(), "uploads": uploads,
        "uploads_pending": any(u.is_active for u in uploads),
        "upload_form": upload_form or WordVectorUploadForm(),
        "sync_limit_mb": SYNC_LIMIT_BYTES // (1024 * 1024),
        "build_form": build_form,
        "detectors": DetectorVersion.objects.select_related("dictionary", "run", "run__eval_collection")[:DETECTOR_VERSIONS],
    }
    return render(request, template, context, status=status)


@require_GET
@admin_required
def model_list(request: HttpRequest) -> HttpResponse:
    return _models_page(request)


@require_POST
@admin_required
def word_vectors_upload(request: HttpRequest) -> HttpResponse:
    """An admin's .vec/.bin file: read here when small (a refused file is named with its fault, and nothing is
    kept), on a worker when large (the page follows the job)."""
    form = WordVectorUploadForm(request.POST, request.FILES)
    status = 400
    if form.is_valid():
        data = form.cleaned_data
        try:
            outcome = upload_word_vectors(data["file"], data["name"] or "", data["dim"], data["dictionary"],
                                          user=request.user)
        except RunError as exc:
            form.add_error("file", str(exc))
        except QueueUnavailable as exc:  # the file is removed and its job failed with this reason
            form.add_error(None, str(exc))
            status = 503
        else:
            if outcome.word_vectors is not None:
                vectors = outcome.word_vectors
                messages.success(request, f"Word vectors {vectors.name}: {vectors.words} words of dimension "
                                          f"{vectors.dim}, from {vectors.file_name}.")
            elif outcome.job is not None:
                messages.success(request, f"{outcome.job.file_name} is large: a worker reads it; its state is shown "
                                          "under Word vectors.")
            return redirect(reverse("training:models") + "#word-vectors")
    return _models_page(request, upload_form=form, status=status)


@require_POST
@admin_required
def index_build(request: HttpRequest) -> HttpResponse:
    """Build an index of a dictionary's latest release with any encoder (a first stage in front of a transformer), on
    a worker; promoted like any other. What does not fit is refused on the form, by name (400)."""
    form = IndexBuildForm(request.POST)
    status = 400
    if form.is_valid():
        data = form.cleaned_data
        dictionary, encoder, first_stage = data["dictionary"], data["encoder"], data["first_stage"]
        try:
            index = queue_index_build(dictionary, encoder, user=request.user, first_stage=first_stage,
                                      activate=data["activate"])
        except IndexBuildError as exc:
            form.add_error(exc.field, str(exc))
        except JobCapReached as exc:  # too many builds under way (this admin's, the dictionary's): nothing was created
            form.add_error(None, str(exc))
            status = 429
        except RunError as exc:
            form.add_error(None, str(exc))
        except QueueUnavailable as exc:  # the index version was created and failed with this reason
            form.add_error(None, str(exc))
            status = 503
        else:
            what = encoder.name if encoder is not None else "tf-idf only"
            what += f", {index.first_stage_label}" if first_stage is not None else ""
            then = ("it is activated once built and the open mentions of its collections re-linked"
                    if data["activate"] else "promote it under Index versions once it is ready")
            messages.success(request, f"Index {index.pk} of {dictionary} ({what}) is building on a worker: its progress "
                                      f"is shown below; {then}.")
            return redirect(reverse("training:models") + "#index-versions")
    return _models_page(request, build_form=form, status=status)


def _card_response(request: HttpRequest, index: IndexVersion) -> HttpResponse:
    card = _build_card(index)
    if request.htmx and not card["polls"]:
        # 286: htmx swaps in this last card and stops polling; the active models and index versions refresh themselves.
        response = HttpResponseStopPolling(render_to_string(BUILD_CARD, {"card": card}, request))
        response["HX-Trigger"] = "index-build-ended"
        return response
    return render(request, BUILD_CARD, {"card": card})


@require_GET
@admin_required
def index_progress(request: HttpRequest, pk: int) -> HttpResponse:
    """A build's card (htmx polls it): phase, names encoded of all, names/s, time left; then its outcome."""
    index = get_object_or_404(IndexVersion.objects.select_related("dictionary", "dictionary_version", "encoder",
                                                                  "first_stage"), pk=pk)
    return _card_response(request, index)


@require_POST
@admin_required
def index_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    """Stop a build: at once when no worker has started it, else between two batches of names (it then ends
    "cancelled", nothing of it kept, not activated)."""
    get_object_or_404(IndexVersion, pk=pk)
    index = cancel_index_build(pk)
    if request.htmx:
        return _card_response(request, IndexVersion.objects.select_related(
            "dictionary", "dictionary_version", "encoder", "first_stage").get(pk=pk))
    if index.state == IndexVersion.State.CANCELLED:
        messages.success(request, f"Index {index.pk}: {index.error}.")
    elif index.state == IndexVersion.State.BUILDING:
        messages.success(request, f"Index {index.pk} stops after the batch of names it is encoding.")
    else:
        messages.error(request, f"Index {index.pk} is {index.get_state_display().lower()}: there is no build to cancel.")
    return redirect(reverse("training:models") + f"#index-build-{index.pk}")


def _back(request: HttpRequest, version: DetectorVersion) -> HttpResponse:
    back = request.POST.get("next", "")
    return redirect(back if back.startswith("/training/") else reverse("training:models") + f"#detector-{version.pk}")


@require_POST
@admin_required
def detector_activate(request: HttpRequest, pk: int) -> HttpResponse:
    """Make a detector version the one its dictionary serves (one atomic switch: the one before it retires)."""
    version = get_object_or_404(DetectorVersion, pk=pk)
    try:
        version = activate_detector(version.pk, user=request.user)
    except DetectorActivationError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Detector {version.label} now finds the mentions of {version.dictionary}'s documents.")
    return _back(request, version)


@require_POST
@admin_required
def detector_retire(request: HttpRequest, pk: int) -> HttpResponse:
    """Stop a detector version serving (its dictionary then has none until another is activated)."""
    version = retire_detector(get_object_or_404(DetectorVersion, pk=pk).pk, user=request.user)
    messages.success(request, f"Detector {version.label} is retired.")
    return _back(request, version)


@require_GET
@reader_required
def collection_linking_note(request: HttpRequest, slug: str) -> HttpResponse:
    """A note for a page that shows a collection's suggestions (loaded by the page with ``hx-trigger="load"``): while
    new ones are on their way (an index building to be activated, or the re-linking after an activation) it says so
    and polls (``?poll=1``); once they are all there the poll stops (286) and has the page reload itself with them
    (``HX-Refresh``). With nothing on its way, the note is empty."""
    collection = get_object_or_404(Collection.objects.select_related("dictionary"), slug=slug)
    access.check_view(request.user, collection)  # a project's collection is its members': as its own page
    linking = collection_linking(collection)
    if request.htmx and not linking.waiting:
        response = HttpResponseStopPolling("")
        if request.GET.get("poll"):  # it was waiting when the page loaded: the page is out of date now
            response["HX-Refresh"] = "true"
        return response
    return render(request, LINKING_NOTE, {"linking": linking})


@require_GET
@admin_required
def latent_type_list(request: HttpRequest, slug: str) -> HttpResponse:
    """The populated latent types by count, paged; the empty ones only when asked for (``?empty=1``)."""
    dictionary = get_object_or_404(Dictionary, slug=slug)
    model = latent_types(dictionary)
    show_empty = request.GET.get("empty") == "1"
    rows = model.populated + (model.empty if show_empty else [])
    page = Paginator(rows, LATENT_TYPES_PER_PAGE).get_page(request.GET.get("page"))
    context = {"model": model, "page": page, "show_empty": show_empty, "extra": "empty=1" if show_empty else ""}
    return render(request, "training/latent_types.html", context)
