"""The comparison page: index versions of a dictionary against the active one on its gold collections, and the
mentions whose top-1 changed (:mod:`webapp.training.comparison`). Curators read it; admins queue evaluations."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseStopPolling

from webapp.core.decorators import admin_required, reader_required
from webapp.core.queue import QueueUnavailable
from webapp.core.roles import is_admin
from webapp.corpus.models import Collection
from webapp.linking.models import IndexVersion
from webapp.projects import access
from webapp.training.comparison import build_cell, changed_mentions, comparison_matrix, latest_evaluation
from webapp.training.errors import RunError
from webapp.training.evaluation import start_evaluation
from webapp.vocab.models import Dictionary

PAGE = "training/compare.html"


@require_GET
@reader_required
def compare(request: HttpRequest) -> HttpResponse:
    """The matrix of one dictionary (``?dictionary=<slug>``); without one, the dictionaries to choose from."""
    slug = request.GET.get("dictionary", "")
    dictionaries = list(Dictionary.objects.filter(index_versions__isnull=False).distinct().order_by("slug"))
    if not slug and len(dictionaries) == 1:
        slug = dictionaries[0].slug
    if not slug:
        return render(request, PAGE, {"dictionaries": dictionaries})
    dictionary = Dictionary.objects.filter(slug=slug).first()
    if dictionary is None:
        return render(request, PAGE, {"dictionaries": dictionaries, "error": f"There is no dictionary {slug!r}."},
                      status=404)
    context = {"dictionaries": dictionaries, "matrix": comparison_matrix(dictionary, request.user), "can_evaluate": is_admin(request.user)}
    return render(request, PAGE, context)


def _cell_objects(request: HttpRequest, pk: int, slug: str) -> tuple[IndexVersion, Collection]:
    index = get_object_or_404(IndexVersion.objects.select_related("dictionary", "encoder"), pk=pk)
    collection = get_object_or_404(Collection, slug=slug, has_gold=True)
    # A project's collection is its members' here too: the same refusal (403) as its collection page.
    access.check_view(request.user, collection)
    if collection.dictionary_id != index.dictionary_id:
        raise Http404(f"{collection.slug} is not a gold collection of {index.dictionary.slug}")
    return index, collection


def _active(index: IndexVersion) -> IndexVersion | None:
    return IndexVersion.objects.filter(dictionary_id=index.dictionary_id, state=IndexVersion.State.ACTIVE).first()


def _cell_response(request: HttpRequest, index: IndexVersion, collection: Collection, error: str = "") -> HttpResponse:
    cell = build_cell(index, collection, _active(index))
    body = render(request, f"{PAGE}#cell", {"cell": cell, "can_evaluate": is_admin(request.user), "error": error})
    if request.method == "GET" and cell.pending is None:
        # 286: htmx swaps in the finished cell and stops polling it.
        return HttpResponseStopPolling(body.content)
    return body


@require_GET
@reader_required
def compare_cell(request: HttpRequest, pk: int, slug: str) -> HttpResponse:
    """One cell of the matrix, polled by htmx while its evaluation is queued or running."""
    index, collection = _cell_objects(request, pk, slug)
    return _cell_response(request, index, collection)


@require_POST
@admin_required
def compare_evaluate(request: HttpRequest, pk: int, slug: str) -> HttpResponse:
    """Queue an evaluation of an index on a gold collection; the cell then polls until it has figures."""
    index, collection = _cell_objects(request, pk, slug)
    error = ""
    try:
        start_evaluation(index, collection, user=request.user)
    except (RunError, QueueUnavailable) as exc:
        error = str(exc)
    if request.htmx:
        return _cell_response(request, index, collection, error)
    if error:
        messages.error(request, error)
    else:
        messages.success(request, f"Evaluating index {index.pk} on {collection} in the background.")
    return redirect(reverse("training:compare") + f"?dictionary={index.dictionary.slug}")


@require_GET
@reader_required
def compare_changes(request: HttpRequest, pk: int, slug: str) -> HttpResponse:
    """The mentions of a collection whose top-1 differs between an index and the active one (or ``?against=<pk>``)."""
    index, collection = _cell_objects(request, pk, slug)
    against = request.GET.get("against", "")
    reference: IndexVersion | None
    if against:
        if not against.isdigit():
            raise Http404(f"against={against!r} is not an index id")
        reference = get_object_or_404(IndexVersion, pk=int(against), dictionary_id=index.dictionary_id)
    else:
        reference = _active(index)
    candidate = latest_evaluation(index, collection)
    base = latest_evaluation(reference, collection) if reference is not None else None
    context = {"index": index, "collection": collection, "reference": reference, "candidate": candidate, "base": base,
               "changes": changed_mentions(candidate, base, access.visible_documents_q(request.user, "document__"))
               if candidate and base else None}
    return render(request, "training/compare_changes.html", context)
