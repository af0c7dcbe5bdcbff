"""The collection page's "Corpus run" form (admins): start a run and follow it on the Jobs page, where its chunks,
progress and time left show (webapp.curation.corpus_runs)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from webapp.core.decorators import admin_required
from webapp.corpus.models import Collection
from webapp.curation.corpus_runs.jobs import CHUNK_DOCUMENTS, start_run
from webapp.curation.corpus_runs.scope import ScopeError, parse_scope
from webapp.curation.services.detection import DetectionUnavailable

MAX_CHUNK = 10_000


@require_POST
@admin_required
def start(request: HttpRequest, slug: str) -> HttpResponse:
    collection = get_object_or_404(Collection.objects.select_related("dictionary"), slug=slug)
    back = reverse("corpus:detail", args=[slug])
    chunk = request.POST.get("chunk_size", "").strip() or str(CHUNK_DOCUMENTS)
    if not chunk.isdigit() or not 1 <= int(chunk) <= MAX_CHUNK:
        messages.error(request, f"The chunk size must be a whole number from 1 to {MAX_CHUNK:,}.")
        return redirect(f"{back}#corpus-run")
    try:
        scope = parse_scope({key: request.POST.get(key, "") for key in ("documents", "concepts", "roots", "mention_types")})
        run = start_run(collection, scope, request.user, int(chunk))
    except (ScopeError, DetectionUnavailable) as exc:
        messages.error(request, f"The corpus run was not started: {exc}.")
        return redirect(f"{back}#corpus-run")
    messages.success(request, f"Corpus run {run.pk} started: {run.progress_total:,} documents in "
                              f"{run.arguments['chunks']} chunks. Its chunks, progress and time left show below.")
    return redirect(f"{reverse('jobs:list')}?parent={run.pk}")
