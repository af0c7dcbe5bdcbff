"""Dictionary pages: the list, one version with its concepts and search, and one concept.

Version-scoped pages take ``?version=<pk>`` and default to the newest version, so links to the latest
release stay stable while an old release stays reachable.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from webapp.core.decorators import admin_required, curator_required
from webapp.core.roles import is_admin
from webapp.projects import access
from webapp.training.model_views import _build_card  # the models page's build card
from webapp.vocab.hierarchy import root_paths
from webapp.vocab.links import concept_url
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, HierarchyEdge, ReleaseCarryOver
from webapp.vocab.releases import (
    default_pair,
    queue_carry_over,
    release_diff,
    release_index_builds,
    review_links,
    review_synonyms,
)
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


def _versions(dictionary: Dictionary) -> list[DictionaryVersion]:
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
@curator_required
def dictionary_list(request: HttpRequest) -> HttpResponse:
    return render(request, "vocab/dictionary_list.html", {"summaries": dictionary_summaries()})


@require_GET
@curator_required
def dictionary_detail(request: HttpRequest, slug: str) -> HttpResponse:
    dictionary = get_object_or_404(Dictionary, slug=slug)
    versions = _versions(dictionary)
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
@curator_required
def concept_search(request: HttpRequest, slug: str) -> HttpResponse:
    """The typeahead's endpoint: always the results fragment."""
    dictionary = get_object_or_404(Dictionary, slug=slug)
    version = _version(request, _versions(dictionary))
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
@curator_required
def concept_detail(request: HttpRequest, slug: str, concept_id: str) -> HttpResponse:
    dictionary = get_object_or_404(Dictionary, slug=slug)
    version = _version(request, _versions(dictionary))
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


# --- releases: what changed, and the curator work carried over ----------------------------------------------

DIFF_ROWS_PER_PAGE = 50
# The lists of a release diff, each paged by its own query parameter (p_added, p_removed, ...).
DIFF_SECTIONS = ("added", "removed", "merged", "obsoleted", "renamed", "names")


def _release_pair(request: HttpRequest, versions: list[DictionaryVersion]) -> tuple[DictionaryVersion, DictionaryVersion]:
    """``?old=<pk>&new=<pk>``, each defaulting to the newest release and the one before it; 404 for a release of
    another dictionary and for one release compared with itself."""
    by_pk = {str(v.pk): v for v in versions}
    pair = default_pair(versions)
    if pair is None:
        raise Http404("this dictionary has a single release: there is nothing to compare it with")
    old, new = pair
    for param in ("old", "new"):
        value = request.GET.get(param, "")
        if value and value not in by_pk:
            raise Http404(f"this dictionary has no release {value!r}")
    old, new = by_pk.get(request.GET.get("old", ""), old), by_pk.get(request.GET.get("new", ""), new)
    if old.pk == new.pk:
        raise Http404(f"release {old.release!r} compared with itself: choose two releases")
    return old, new


@require_GET
@curator_required
def release_diff_view(request: HttpRequest, slug: str) -> HttpResponse:
    dictionary = get_object_or_404(Dictionary, slug=slug)
    versions = _versions(dictionary)
    old, new = _release_pair(request, versions)
    diff = release_diff(old, new)
    pair_query = {"old": old.pk, "new": new.pk}
    pages = {}
    for section in DIFF_SECTIONS:
        param = f"p_{section}"
        page = Paginator(getattr(diff, section), DIFF_ROWS_PER_PAGE).get_page(request.GET.get(param))
        others = {k: v for k, v in request.GET.items() if k.startswith("p_") and k != param}
        pages[section] = (page, urlencode({**pair_query, **others}), param)
    # Links of a project's documents are its members' (webapp.projects.access), here as everywhere.
    links = (review_links(new).filter(mention__document__collection__in=access.visible_collections(request.user))
             .filter(access.visible_documents_q(request.user, "mention__document__")))
    context = {
        "dictionary": dictionary,
        "versions": versions,
        "old": old,
        "new": new,
        "diff": diff,
        "counts": diff.counts,
        "pages": pages,
        "carry": ReleaseCarryOver.objects.filter(version=new).select_related("previous").first(),
        "review_synonyms": review_synonyms(new),
        "review_links": Paginator(links, DIFF_ROWS_PER_PAGE).get_page(request.GET.get("page")),
        "review_links_query": urlencode(pair_query),
        "builds": [_build_card(index) for index in release_index_builds(new)[:3]],
        "is_admin": is_admin(request.user),
    }
    return render(request, "vocab/release_diff.html", context)


@require_POST
@admin_required
def release_carry_over(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Run the carry-over of a release again (idempotent), e.g. after curators worked on the old release since."""
    version = get_object_or_404(DictionaryVersion, pk=pk, dictionary__slug=slug)
    queue_carry_over(version)
    messages.success(request, f"Carry-over to release {version.release} queued: the counts below update once a worker ran it.")
    return redirect(f"{reverse('vocab:releases', args=[slug])}?new={version.pk}")
