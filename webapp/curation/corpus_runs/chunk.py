"""One chunk of a corpus run: detect and link its documents, one transaction per document, idempotently.

Per document: it is claimed (``running``; one queued for an import's detection is left to that), the run's
detectors find its spans (:func:`~webapp.curation.services.detection.find_spans`), and
:func:`~webapp.curation.services.detection.write_mentions` makes its undecided detector mentions exactly those
spans: a span already there is kept as it is, one no longer found goes, a mention a curator made or decided (and
gold) is never touched, nor is a span overlapping one. Then its open mentions (of the run's mention types) are
ranked and their model links made exactly the ranking (:func:`store_many_suggestions`), within the run's concept
scope; a mention the run detected whose best concept is outside the scope is not kept. Doing a document twice
therefore writes the same rows once: a chunk redone after its worker died (or a message delivered twice) doubles
nothing.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from django.db import transaction

from webapp.core.batching import batched
from webapp.corpus.models import Collection, Document, Mention
from webapp.curation.corpus_runs.group import GROUP_DOCUMENTS, StageClock, allowed_concepts, annotate_group
from webapp.curation.corpus_runs.scope import RunScope, parse_scope, resolve
from webapp.curation.models import OPEN_STATUSES
from webapp.curation.services.detection import TRANSIENT, Detectors, detectors_for, find_spans, write_mentions
from webapp.curation.services.suggestions import (
    FILTER_WIDENING,
    SUGGESTIONS_K,
    MentionSuggestions,
    concept_pks,
    conflicts,
    link_in_document,
    part_confidences,
    store_many_suggestions,
    within_filter,
)
from webapp.jobs import lifecycle
from webapp.jobs.lease import JobLease
from webapp.jobs.models import Job
from webapp.jobs.progress import ProgressRecorder

logger = logging.getLogger(__name__)

State = Document.DetectionState


class ModelsChanged(Exception):
    """The dictionary's active index or tagger is not the one the run started with."""


def run_chunk(job_id: int) -> dict[str, Any]:
    """Run one chunk under its lease; what its documents came to. A chunk another worker runs, or one that has
    ended (done, cancelled), is left as it is."""
    with JobLease(job_id) as lease:
        if not lease.held or not lifecycle.take(job_id):
            return {"skipped": 1}
        chunk = Job.objects.get(pk=job_id)
        try:
            outcome = _run(chunk)
        except ModelsChanged as exc:
            lifecycle.fail(job_id, str(exc))
            return {"failed": 1}
        # Its last count through this connection as well: the recorder's own may not see the row (a test's
        # transaction), and the parent sums what its chunks say when the chunk ends.
        Job.objects.filter(pk=job_id).update(progress=outcome.pop("seen", 0))
        if outcome.pop("cancelled", 0):
            outcome.pop("stages", None)
            lifecycle.stop_cancelled(job_id)
            return outcome
        stages = outcome.pop("stages", {})
        said = ", ".join(f"{count} {how}" for how, count in sorted(outcome.items()))
        lifecycle.succeed(job_id, {"summary": said, **outcome, "stages": stages})
    return outcome


def _run(chunk: Job) -> dict[str, Any]:
    run = Job.objects.get(pk=chunk.parent_id)
    collection = Collection.objects.select_related("dictionary").get(slug=chunk.arguments["collection"])
    detectors = detectors_for(collection)
    _check_models(run, detectors)
    scope = resolve(parse_scope(run.arguments.get("scope") or {}), collection)
    ids = list(chunk.arguments.get("documents") or [])
    outcome: Counter[str] = Counter()
    clock = StageClock()
    with ProgressRecorder(chunk.pk) as progress:
        done = 0
        for group in batched(ids, GROUP_DOCUMENTS):
            progress(done, len(ids))
            if lifecycle.cancel_wanted(chunk.pk):
                outcome["cancelled"] = 1
                break
            try:
                outcome.update(annotate_group(group, detectors, scope, clock))
            except TRANSIENT:
                raise  # the task retries the chunk; what committed stays, and is written the same again
            except Exception:
                logger.exception("corpus run %s: a group of %d documents failed; each is done alone", run.pk, len(group))
                outcome.update(_one_by_one(run, group, detectors, scope))
            done += len(group)
            outcome["seen"] += len(group)
        else:
            progress(len(ids), len(ids))
        progress.flush()
    return {**outcome, "stages": clock.rounded()}


def _one_by_one(run: Job, ids: list[int], detectors: Detectors, scope: RunScope) -> Counter[str]:
    """A failed group's documents each alone, so that only the one at fault fails (saying why)."""
    outcome: Counter[str] = Counter()
    for pk in ids:
        try:
            outcome.update(annotate(pk, detectors, scope))
        except TRANSIENT:
            raise
        except Exception as exc:
            logger.exception("corpus run %s: document %s failed", run.pk, pk)
            _finish_document(pk, State.FAILED, f"corpus run {run.pk} failed on it: {type(exc).__name__}: {exc}")
            outcome["failed"] += 1
    return outcome


def _check_models(run: Job, detectors: Detectors) -> None:
    from webapp.curation.corpus_runs.jobs import models_used

    wanted, now = run.arguments.get("models") or {}, models_used(detectors)
    if (wanted.get("index_version"), wanted.get("tagger_version")) != (now["index_version"], now["tagger_version"]):
        raise ModelsChanged(f"the active models changed since corpus run {run.pk} started ({wanted.get('detection')} "
                            f"then, {now['detection']} now): start a new run so that one set of models writes it all")


def annotate(document_id: int, detectors: Detectors, scope: RunScope) -> Counter[str]:
    """Detect and link one document; counts of documents, mentions and links written (kept as they were included)."""
    claimed = Document.objects.filter(pk=document_id).exclude(detection_state=State.QUEUED).update(
        detection_state=State.RUNNING, detection_error="")
    if not claimed:
        return Counter(skipped=1)  # an import's detection has it queued: that one writes its mentions
    detect = not scope.mention_types or detectors.mention_type in scope.mention_types
    detected: list[int] = []
    if detect:
        text = Document.objects.values_list("text", flat=True).get(pk=document_id)
        detected = write_mentions(document_id, find_spans(text, detectors), detectors) or []
    mentions, links = _link(document_id, detectors, scope, set(detected)) if detectors.linker is not None else (0, 0)
    _finish_document(document_id, State.DONE, "")
    return Counter(documents=1, mentions=mentions, links=links)


def _link(document_id: int, detectors: Detectors, scope: RunScope, detected: set[int]) -> tuple[int, int]:
    """Rank the document's open mentions (of the run's types) and store their links within the scope; the run's
    detected mentions whose best concept is outside the scope are removed. (mentions linked, links stored)."""
    active = detectors.linker
    assert active is not None
    with transaction.atomic():
        document = Document.objects.select_related("collection").get(pk=document_id)
        rows = Mention.objects.filter(document_id=document_id, status__in=OPEN_STATUSES)
        if scope.mention_types:
            rows = rows.filter(mention_type__in=scope.mention_types)
        mentions = list(rows.select_for_update(of=("self",)).order_by("pk"))
        if not mentions:
            return 0, 0
        allows = allowed_concepts(scope, document)
        k = SUGGESTIONS_K if allows is None else SUGGESTIONS_K * FILTER_WIDENING
        queries, linked = link_in_document(active, mentions, document.text, k)
        mine = scope.allows()
        # A mention the run detected is kept where its best concept is in the run's scope (MedCATtrainer's
        # whitelist): one that is best linked elsewhere is another concept's mention, not one of the scope's.
        dropped = [m.pk for m, one in zip(mentions, linked, strict=True)
                   if mine is not None and m.pk in detected and not (one.candidates and mine(one.candidates[0].concept_id))]
        if allows is not None:
            linked = [within_filter(one, allows, SUGGESTIONS_K) for one in linked]
        Mention.objects.filter(pk__in=dropped).delete()
        kept = [(m, one, conf) for m, one, conf in zip(mentions, linked, part_confidences(active, queries, linked), strict=True)
                if m.pk not in dropped]
        pks = concept_pks(active.dictionary_version, {c.concept_id for _, one, _ in kept for c in one.candidates})
        store_many_suggestions([MentionSuggestions(m, one.candidates, conflicts(one), conf) for m, one, conf in kept],
                               active.label, pks)
    return len(kept), sum(len(one.candidates) for _, one, _ in kept)


def _finish_document(pk: int, state: str, error: str) -> None:
    Document.objects.filter(pk=pk, detection_state=State.RUNNING).update(
        detection_state=state, detection_error=error.replace("\x00", "\\x00"))
