"""A dictionary's releases page: what changed between two releases, the curator work carried over to the newer
one and the index built over it. It reads training's carry-over and index builds and filters links by project, so
it lives in training, not in vocab (README, "Layers"); its addresses stay under /dictionaries/ (webapp.urls)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path, reverse
from django.views.decorators.http import require_GET, require_POST

from webapp.core.decorators import admin_required, reader_required
from webapp.core.roles import is_admin
from webapp.projects import access
from webapp.training.model_views import _build_card  # the models page's build card
from webapp.training.releases import release_index_builds, review_links, review_synonyms
from webapp.vocab.models import Dictionary, DictionaryVersion, ReleaseCarryOver
from webapp.vocab.releases import default_pair, queue_carry_over, release_diff
from webapp.vocab.views import versions_of

# --- releases: what changed, and the curator work carried over ----------------------------------------------

DIFF_ROWS_PER_PAGE = 50
# The lists of a release diff, each paged by its own query parameter (p_added, p_removed, ...).
DIFF_SECTIONS = ("added", "removed", "merged", "obsoleted", "renamed", "names")


def _release_pair(
    request: HttpRequest, versions: list[DictionaryVersion]
) -> tuple[DictionaryVersion, DictionaryVersion]:
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
@reader_required
def release_diff_view(request: HttpRequest, slug: str) -> HttpResponse:
    dictionary = get_object_or_404(Dictionary, slug=slug)
    versions = versions_of(dictionary)
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
    links = (
        review_links(new)
        .filter(mention__document__collection__in=access.visible_collections(request.user))
        .filter(access.visible_documents_q(request.user, "mention__document__"))
    )
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
    messages.success(
        request,
        f"Carry-over to release {version.release} queued: the counts below update once a worker ran it.",
    )
    return redirect(f"{reverse('vocab:releases', args=[slug])}?new={version.pk}")


# Included by webapp.urls into the vocab namespace under /dictionaries/, beside webapp.vocab.urls.
urlpatterns = [
    path("<slug:slug>/releases/", release_diff_view, name="releases"),
    path("<slug:slug>/releases/<int:pk>/carry-over/", release_carry_over, name="carry-over"),
]
