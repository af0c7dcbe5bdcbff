"""Admin pages for the models: each dictionary's active index, its re-ranker's latent types, the index versions with
the form that builds one (any encoder, an optional BNE/DAN first stage), the base encoders (hierarchy pre-training)
with the index versions built from them, the trained encoders by kind, and the word vectors (fastText runs' and
uploaded files) that BNE and DAN runs start from."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from webapp.core.decorators import admin_required
from webapp.core.queue import QueueUnavailable
from webapp.training.base_encoders import base_encoder_rows
from webapp.training.errors import RunError
from webapp.training.forms import IndexBuildForm, WordVectorUploadForm
from webapp.training.index_builds import IndexBuildError
from webapp.training.latent import active_models, latent_types
from webapp.training.models import EncoderModel, IndexVersion
from webapp.training.services import queue_index_build
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


def _models_page(request: HttpRequest, upload_form: WordVectorUploadForm | None = None,
                 build_form: IndexBuildForm | None = None, status: int = 200) -> HttpResponse:
    template = "training/model_list.html"
    target = request.htmx.target if request.htmx else None
    if build_form is None and target in (None, "index-build"):
        # The build form re-rendered for the dictionary and encoder chosen (htmx), or the newest fitting ones.
        build_form = IndexBuildForm.for_choice(request.GET.get("dictionary"), request.GET.get("encoder"))
    if target == "index-build":
        return render(request, template + "#index-build", {"build_form": build_form}, status=status)
    indexes = list(IndexVersion.objects.select_related("dictionary", "dictionary_version", "encoder", "first_stage")
                   .order_by("-created_at", "-id")[:INDEX_VERSIONS])
    context = {"indexes": indexes, "indexes_building": any(i.state == IndexVersion.State.BUILDING for i in indexes)}
    if target == "index-version-list":
        return render(request, template + "#index-version-list", context, status=status)
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
            index = queue_index_build(dictionary, encoder, user=request.user, first_stage=first_stage)
        except IndexBuildError as exc:
            form.add_error(exc.field, str(exc))
        except RunError as exc:
            form.add_error(None, str(exc))
        except QueueUnavailable as exc:  # the index version was created and failed with this reason
            form.add_error(None, str(exc))
            status = 503
        else:
            what = encoder.name if encoder is not None else "tf-idf only"
            what += f", {index.first_stage_label}" if first_stage is not None else ""
            messages.success(request, f"Index {index.pk} of {dictionary} ({what}) is building on a worker; promote it "
                                      "under Index versions once it is ready.")
            return redirect(reverse("training:models") + "#index-versions")
    return _models_page(request, build_form=form, status=status)


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
