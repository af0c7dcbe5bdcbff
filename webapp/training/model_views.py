"""Admin pages for the models: each dictionary's active index, its re-ranker's latent types, and the base
encoders (hierarchy pre-training) with the index versions built from them."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from webapp.core.decorators import admin_required
from webapp.training.base_encoders import base_encoder_rows, get_base_encoder
from webapp.training.errors import RunError
from webapp.training.latent import active_models, latent_types
from webapp.training.services import queue_index_build
from webapp.vocab.models import Dictionary

LATENT_TYPES_PER_PAGE = 100


@require_GET
@admin_required
def model_list(request: HttpRequest) -> HttpResponse:
    context = {"models": active_models(), "base_encoders": base_encoder_rows(),
               "dictionaries": Dictionary.objects.order_by("slug")}
    return render(request, "training/model_list.html", context)


@require_POST
@admin_required
def index_build(request: HttpRequest) -> HttpResponse:
    """Build an index of a dictionary's latest release with a base encoder, on a worker; promoted like any other."""
    dictionary = Dictionary.objects.filter(slug=request.POST.get("dictionary", "")).first()
    try:
        if dictionary is None:
            raise RunError("Choose a dictionary to index.")
        encoder = get_base_encoder(request.POST.get("encoder", ""))
        index = queue_index_build(dictionary, encoder, user=request.user)
    except RunError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Index {index.pk} of {dictionary} with {encoder.name} is building on a worker; "
                                  "promote it here once it is ready.")
    return redirect("training:models")


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
