"""The dashboard (the home page): a summary of every domain app below it.

It reads dictionaries, collections and projects, each as the user may see them, so it lives in projects, the
highest layer it reads (README, "Layers"), not in core, the lowest.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from webapp.core.roles import can_read
from webapp.corpus.selectors import collection_summaries
from webapp.projects import access
from webapp.projects.selectors import project_summaries
from webapp.vocab.selectors import dictionary_summaries


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    """The dashboard: what is loaded. An account without a role sees only how to get one."""
    if not can_read(request.user):
        return render(request, "core/home.html", {"has_role": False})
    collections = collection_summaries(
        access.visible_collections(request.user), access.visible_documents_q(request.user)
    )
    context = {
        "has_role": True,
        "projects": project_summaries(request.user),
        "dictionaries": dictionary_summaries(),
        "collections": collections,
        "document_count": sum(c.documents for c in collections),
        "mention_count": sum(c.progress.mentions for c in collections),
        "decided_count": sum(c.progress.decided for c in collections),
    }
    return render(request, "core/home.html", context)
