"""Admin pages for the models that serve: each dictionary's active index, and its re-ranker's latent types."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from webapp.core.decorators import admin_required
from webapp.training.latent import active_models, latent_types
from webapp.vocab.models import Dictionary

LATENT_TYPES_PER_PAGE = 100


@require_GET
@admin_required
def model_list(request: HttpRequest) -> HttpResponse:
    return render(request, "training/model_list.html", {"models": active_models()})


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
