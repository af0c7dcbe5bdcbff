"""Dictionary pages: the list, one version with its concepts and search, and one concept.

Version-scoped pages take ``?version=<pk>`` and default to the newest version, so links to the latest
release stay stable while an old release stays reachable.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET

from webapp.core.decorators import reader_required
from webapp.vocab.hierarchy import root_paths
from webapp.vocab.links import concept_url
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, HierarchyEdge
from webapp.vocab.selectors import (
    MIN_QUERY_LENGTH,
    dictionary_summaries,
    first_by_id,
    name_counts,
    search_concepts,
    version_counts,
)

CONCEPTS_PER_PAGE = 50
MAX_CHILDREN = 200


def versions_of(dictionary: Dictionary) -> list[DictionaryVersion]:
    return list(dictionary.versions.order_by("-imported_at"))


def _version(request: HttpRequest, versions: list[DictionaryVersion]) -> DictionaryVersion:
    """The version named by ``?version=<pk>``, or the newest one; 404 where there is none."""
    requested = request.GET.get("version", "")
    if not requested:
        if not versions:
            raise Http404("this dictionary has no version yet")
        return versions[0]
    for version in versions:
        if str(version.pk) == requested:
            return version
    raise Http404(f"this dictionary has no version {requested!r}")


@require_GET
@reader_required
def dictionary_list(request: HttpRequest) -> HttpResponse:
    return render(request, "vocab/dictionary_list.html", {"summaries": dictionary_summaries()})


@require_GET
@reader_required
def dictionary_detail(request: HttpRequest, slug: str) -> HttpResponse:
    dictionary = get_object_or_404(Dictionary, slug=slug)
    versions = versions_of(dictionary)
    if not versions:
        return render(request, "vocab/dictionary_detail.html", {"dictionary": dictionary, "version": None})
    version = _version(request, versions)
    query = request.GET.get("q", "").strip()
    concepts = Concept.objects.filter(version=version).select_related("version__dictionary")
    page = Paginator(concepts, CONCEPTS_PER_PAGE).get_page(request.GET.get("page"))
    counts = name_counts([c.pk for c in page])
    context = {
        "dictionary": dictionary,
        "version": version,
        "versions": versions,
        "counts": version_counts(version),
        "page": page,
        "rows": [(c, counts.get(c.pk, 0)) for c in page],
        "query": query,
        "hits": search_concepts(version, query) if query else None,
        "min_query_length": MIN_QUERY_LENGTH,
        "page_query": urlencode({"version": version.pk}),
    }
    template = "vocab/dictionary_detail.html"
    if request.htmx and not request.htmx.history_restore_request and request.htmx.target == "concept-list":
        template += "#concept-list"
    return render(request, template, context)


@require_GET
@reader_required
def concept_search(request: HttpRequest, slug: str) -> HttpResponse:
    """The typeahead's endpoint: always the results fragment."""
    dictionary = get_object_or_404(Dictionary, slug=slug)
    version = _version(request, versions_of(dictionary))
    query = request.GET.get("q", "").strip()
    context = {
        "dictionary": dictionary,
        "version": version,
        "query": query,
        "hits": search_concepts(version, query) if query else None,
        "min_query_length": MIN_QUERY_LENGTH,
    }
    return render(request, "vocab/dictionary_detail.html#search-results", context)


@require_GET
@reader_required
def concept_detail(request: HttpRequest, slug: str, concept_id: str) -> HttpResponse:
    dictionary = get_object_or_404(Dictionary, slug=slug)
    version = _version(request, versions_of(dictionary))
    concept = Concept.objects.filter(version=version, concept_id=concept_id).first()
    if concept is None:
        # An alternative id (a merged or secondary id) leads to the concept that carries it; MEDIC lists
        # some alternative ids under more than one concept, so the first by id is taken.
        carrier = first_by_id(Concept.objects.filter(version=version, alt_ids__contains=[concept_id]))
        if carrier is None:
            raise Http404(f"{concept_id} is not a concept of {dictionary.slug} {version.release}")
        return redirect(concept_url(carrier))
    edges = HierarchyEdge.objects.select_related("parent__version__dictionary", "child__version__dictionary")
    children = list(edges.filter(parent=concept).order_by("child__preferred_name")[: MAX_CHILDREN + 1])
    context = {
        "dictionary": dictionary,
        "version": version,
        "concept": concept,
        "names": concept.names.select_related("created_by"),
        "known_types": concept.known_types.select_related("vocabulary").order_by("vocabulary__name", "label"),
        "parent_edges": edges.filter(child=concept).order_by("parent__preferred_name"),
        "child_edges": children[:MAX_CHILDREN],
        "more_children": len(children) > MAX_CHILDREN,
        "root_paths": root_paths(concept),
    }
    return render(request, "vocab/concept_detail.html", context)
