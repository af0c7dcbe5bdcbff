"""Collection pages: the list with progress, one collection's documents, and one document's mentions.

They show documents as projects let the user see them (webapp.projects.access) and say whether the dictionary serves
candidates yet, so they live above projects and serving, in curation, where these pages lead (README, "Layers"), not
in corpus; their addresses and names stay corpus's (/collections/, the "corpus" namespace: webapp.urls).
"""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import path
from django.views.decorators.http import require_GET

from webapp.core.decorators import reader_required
from webapp.corpus.formats import FORMATS
from webapp.corpus.formats.services import ID_FORMS, LINK_CHOICES
from webapp.corpus.models import Collection, Document, Mention
from webapp.corpus.selectors import (
    Progress,
    collection_summaries,
    document_status_counts,
    documents_with_counts,
    mention_rows,
    neighbours,
    status_counts,
    text_blocks,
)
from webapp.corpus.windows import window_number
from webapp.linking.versions import has_active_index
from webapp.projects import access

DOCUMENTS_PER_PAGE = 50
# The export form's choices: the API's export (GET /api/collections/<slug>/export/) takes the same names.
EXPORT_CHOICES = {
    "export_formats": [(f.name, f.label) for f in FORMATS.values()],
    "export_links": list(LINK_CHOICES.items()),
    "export_ids": list(ID_FORMS.items()),
}


@require_GET
@reader_required
def collection_list(request: HttpRequest) -> HttpResponse:
    summaries = collection_summaries(access.visible_collections(request.user), access.visible_documents_q(request.user))
    return render(request, "corpus/collection_list.html", {"summaries": summaries})


@require_GET
@reader_required
def collection_detail(request: HttpRequest, slug: str) -> HttpResponse:
    collection = get_object_or_404(Collection.objects.select_related("dictionary"), slug=slug)
    access.check_view(request.user, collection)
    # A project over some of the documents hides only those from those outside it.
    documents = documents_with_counts(collection, access.visible_documents_q(request.user))
    page = Paginator(documents, DOCUMENTS_PER_PAGE).get_page(request.GET.get("page"))
    rows = [(doc, Progress(doc.n_mentions, doc.n_decided)) for doc in page]  # type: ignore[attr-defined]
    template = "corpus/collection_detail.html"
    if request.htmx and not request.htmx.history_restore_request and request.htmx.target == "document-list":
        template += "#document-list"
    context = {"collection": collection, "page": page, "rows": rows, "index_missing": _index_missing(collection),
               "hidden_documents": access.hidden_documents_note(request.user, collection), **EXPORT_CHOICES}
    return render(request, template, context)


def _index_missing(collection: Collection) -> bool:
    """The collection's dictionary serves no candidates yet: it has no active index (a new dictionary)."""
    return collection.dictionary_id is not None and not has_active_index(collection.dictionary_id)


@require_GET
@reader_required
def document_detail(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    document = get_object_or_404(Document.objects.select_related("collection__dictionary"), collection__slug=slug, pk=pk)
    access.check_view_document(request.user, document)
    window = window_number(document, request.GET.get("part"))  # a long document is shown a part at a time
    rows = mention_rows(document, window)
    previous, following = neighbours(document, access.visible_documents_q(request.user))
    counts = document_status_counts(document) if not window.is_whole else status_counts(rows)
    context = {
        "collection": document.collection,
        "document": document,
        "window": window,
        "rows": rows,
        "mention_total": sum(count for _, _, count in counts),
        "blocks": text_blocks(document, rows, window),
        # A title that is not part of the text (no offsets count over it) is shown above it, unhighlighted.
        "plain_title": "" if document.text.startswith(document.title) or window.start > 0 else document.title,
        "status_counts": counts,
        "statuses": Mention.Status.choices,
        "previous": previous,
        "next": following,
    }
    return render(request, "corpus/document_detail.html", context)


urlpatterns = [
    path("", collection_list, name="list"),
    path("<slug:slug>/", collection_detail, name="detail"),
    path("<slug:slug>/documents/<int:pk>/", document_detail, name="document"),
]
