"""A group of a chunk's documents annotated together: the corpus run's fast path.

One document at a time, a run spent its time on what does not depend on the document: a tagger batch of one
abstract's two windows, an encoder batch of its eight mentions, and some twenty database round trips. A group of
:data:`GROUP_DOCUMENTS` documents is claimed, read and finished in one statement each; the tagger reads all their
windows in length-sorted batches; the linker searches all their mentions at once (each re-ranked in its own text:
:meth:`linker.linker.Linker.link_documents`); and their suggestions are stored in one transaction.

What each document comes to is what :func:`webapp.curation.corpus_runs.chunk.annotate` makes of it alone, by the
same rules: detector mentions written by :func:`~webapp.curation.services.detection.write_mentions_many` (the
group's in one transaction; curators' mentions never touched), the open mentions of the run's types linked within the
run's concept scope and a project's filter, a detected mention whose best concept is outside the scope removed,
model links made exactly the ranking (:func:`store_many_suggestions`). The linking reads no lock; the transaction
that stores it locks the mentions and keeps only those still open and unchanged, so a curator deciding one
meanwhile wins, and a redone group writes nothing new.

Where the time goes is measured per stage (:class:`StageClock`): a chunk's ``result["stages"]`` (seconds), which
bench/corpus.py sums into the run's profile.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import transaction

from linker.rerank import MentionSpan
from linker.rerank.results import LinkedMention
from webapp.corpus.models import Document, Mention
from webapp.curation.corpus_runs.scope import RunScope
from webapp.curation.models import OPEN_STATUSES
from webapp.curation.services.detection import Detectors, find_spans_many, write_mentions_many
from webapp.curation.services.suggestions import (
    FILTER_WIDENING,
    SUGGESTIONS_K,
    MentionSuggestions,
    concept_pks,
    conflicts,
    part_confidences,
    store_many_suggestions,
    within_filter,
)
from webapp.projects.concept_filter import filter_for_document

__all__ = ["GROUP_DOCUMENTS", "StageClock", "allowed_concepts", "annotate_group"]

GROUP_DOCUMENTS = 32  # documents annotated together: 64 tagger windows of an abstract corpus, about 250 mentions
State = Document.DetectionState


class StageClock:
    """Seconds spent per stage, summed: ``with clock("detect:tagger"): ...``."""

    def __init__(self) -> None:
        self.seconds: Counter[str] = Counter()

    @contextmanager
    def __call__(self, stage: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[stage] += time.perf_counter() - started

    def rounded(self) -> dict[str, float]:
        return {stage: round(seconds, 3) for stage, seconds in sorted(self.seconds.items())}


def annotate_group(ids: Sequence[int], detectors: Detectors, scope: RunScope, clock: StageClock) -> Counter[str]:
    """Detect and link the documents ``ids`` together; counts of documents, mentions and links written (and of
    documents skipped: an import's detection has them queued)."""
    with clock("claim"):
        claimed = _claim(ids)
    outcome: Counter[str] = Counter(skipped=len(ids) - len(claimed))
    if not claimed:
        return outcome
    with clock("read"):
        texts = dict(Document.objects.filter(pk__in=claimed).values_list("pk", "text"))
    detected: set[int] = set()
    if not scope.mention_types or detectors.mention_type in scope.mention_types:
        found = find_spans_many([texts[pk] for pk in claimed], detectors, clock)
        with clock("write:mentions"):
            written = write_mentions_many(dict(zip(claimed, found, strict=True)), detectors)
            detected.update(pk for ids in written.values() for pk in ids)
    if detectors.linker is not None:
        mentions, links = _link(claimed, texts, detectors, scope, detected, clock)
        outcome.update(mentions=mentions, links=links)
    with clock("claim"):
        Document.objects.filter(pk__in=claimed, detection_state=State.RUNNING).update(
            detection_state=State.DONE, detection_error="")
    outcome["documents"] += len(claimed)
    return outcome


def _claim(ids: Sequence[int]) -> list[int]:
    """The documents now ``running``, in the order given; one an import's detection has queued is left to it."""
    free = set(Document.objects.filter(pk__in=ids).exclude(detection_state=State.QUEUED).values_list("pk", flat=True))
    Document.objects.filter(pk__in=free).exclude(detection_state=State.QUEUED).update(
        detection_state=State.RUNNING, detection_error="")
    return [pk for pk in ids if pk in free]


def _link(claimed: Sequence[int], texts: dict[int, str], detectors: Detectors, scope: RunScope, detected: set[int],
          clock: StageClock) -> tuple[int, int]:
    """Rank the documents' open mentions (of the run's types) together and store their links within the scope;
    the run's detected mentions whose best concept is outside it are removed. (mentions linked, links stored)."""
    active = detectors.linker
    assert active is not None
    with clock("read"):
        rows = Mention.objects.filter(document_id__in=claimed, status__in=OPEN_STATUSES)
        if scope.mention_types:
            rows = rows.filter(mention_type__in=scope.mention_types)
        by_document: dict[int, list[Mention]] = defaultdict(list)
        for mention in rows.order_by("document_id", "pk"):
            by_document[mention.document_id].append(mention)
        if not by_document:
            return 0, 0
        documents = Document.objects.select_related("collection").in_bulk(list(by_document))
        allows = {pk: allowed_concepts(scope, documents[pk]) for pk in by_document}
    with clock("link"):
        linked: dict[int, LinkedMention] = {}
        queries: dict[int, list[str]] = {}
        for widened in (False, True):  # a document under a filter asks for more candidates, as a panel does
            pks = [pk for pk in by_document if (allows[pk] is not None) == widened]
            if pks:
                _rank(active.linker, [(pk, by_document[pk], texts[pk]) for pk in pks],
                      SUGGESTIONS_K * (FILTER_WIDENING if widened else 1), linked, queries)
        mine = scope.allows()
        # A mention the run detected is kept where its best concept is in the run's scope (MedCATtrainer's
        # whitelist): one that is best linked elsewhere is another concept's mention, not one of the scope's.
        dropped = {m.pk for ms in by_document.values() for m in ms if mine is not None and m.pk in detected
                   and not (linked[m.pk].candidates and mine(linked[m.pk].candidates[0].concept_id))}
        for pk, ms in by_document.items():
            if allows[pk] is not None:
                for m in ms:
                    linked[m.pk] = within_filter(linked[m.pk], allows[pk], SUGGESTIONS_K)
        kept = [m for ms in by_document.values() for m in ms if m.pk not in dropped]
        confidences = part_confidences(active, [queries[m.pk] for m in kept], [linked[m.pk] for m in kept])
    with clock("write:links"), transaction.atomic():
        # Locked now, and stored only where still as linked: a curator's decision meanwhile is not overwritten.
        current = {m.pk: m for m in Mention.objects.filter(pk__in=[m.pk for m in kept] + list(dropped),
                                                             status__in=OPEN_STATUSES)
                   .order_by("pk").select_for_update(of=("self",))}  # in id order: two workers never deadlock
        seen = {m.pk: (m.start, m.end, m.text) for ms in by_document.values() for m in ms}
        unchanged = {pk for pk, m in current.items() if (m.start, m.end, m.text) == seen[pk]}
        Mention.objects.filter(pk__in=dropped & unchanged).delete()
        items = [MentionSuggestions(current[m.pk], linked[m.pk].candidates, conflicts(linked[m.pk]), conf)
                 for m, conf in zip(kept, confidences, strict=True) if m.pk in unchanged]
        pks = concept_pks(active.dictionary_version, {c.concept_id for it in items for c in it.candidates})
        store_many_suggestions(items, active.label, pks)
    return len(items), sum(len(it.candidates) for it in items)


def _rank(linker: Any, documents: list[tuple[int, list[Mention], str]], k: int,
          linked: dict[int, LinkedMention], queries: dict[int, list[str]]) -> None:
    """Each mention's ranking in its document (one search for all), and the queries the linker made of it."""
    asked = [linker.queries_for([m.text for m in ms], text) for _, ms, text in documents]
    spans = [([MentionSpan(m.text, m.start, m.end) for m in ms], text) for _, ms, text in documents]
    for (_, ms, _), doc_queries, doc_linked in zip(documents, asked, linker.link_documents(spans, k, queries=asked),
                                                    strict=True):
        for m, q, one in zip(ms, doc_queries, doc_linked, strict=True):
            linked[m.pk], queries[m.pk] = one, list(q)


def allowed_concepts(scope: RunScope, document: Document) -> Callable[[str], bool] | None:
    """The run's concept scope and the covering project's concept filter, both (None: neither restricts)."""
    project = filter_for_document(document)
    mine = scope.allows()
    if project is None:
        return mine
    if mine is None:
        return project.allows_id
    return lambda concept_id: mine(concept_id) and project.allows_id(concept_id)
