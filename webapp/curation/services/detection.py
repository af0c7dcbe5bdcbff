"""Mention detection: the collection's detectors find a document's mentions, which are written and then linked.

The worker task ``tasks.detection.detect_mentions`` calls :func:`detect_documents` with the ids of documents the
document writer queued (:mod:`webapp.corpus.detection`). Per document:

1. it is claimed (``queued`` -> ``running``; a document in any other state is left alone, so a re-delivered task
   does nothing twice, and a task meant for another database finds nothing queued under the id);
2. the collection's detectors run (``Collection.detection``): the dictionary matcher over the names of the
   dictionary's active index (the one door, :func:`webapp.linking.registry.get_active_linker`, as
   ``POST /api/link`` uses it), the dictionary's active tagger (:func:`active_tagger`), or both, merged by
   :func:`linker.detect.merge.merge` with the tagger-first rule (for a tagger that reads dictionary features, only
   the matcher's spans of names new to it are merged in: see that module);
3. the mentions are written in one transaction (source ``detector``, which detector, its version): mentions a
   curator made or decided are kept, and a span overlapping one of them is left out; undecided detector mentions
   of an earlier run are replaced (the same span is kept as it is, so the suggestions it has stay);
4. the new mentions are linked with the active linker (:func:`~webapp.curation.services.suggestions.suggest_links`),
   and the document is ``done``, saying what detected its mentions.

A collection without a dictionary, or whose dictionary has neither an index nor a tagger, fails its documents with
the reason (they stay curatable by hand; an activation queues those that lacked an index again). Any other error
fails the document with it, and nothing of that document is written. A transient database error is raised for
the task to retry.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from django.db import InterfaceError, OperationalError, transaction
from django.utils import timezone

from linker.detect.spans import BOTH, MATCHER, TAGGER, Span
from webapp.corpus.detection import NO_INDEX, mark_queued
from webapp.corpus.models import Collection, Document, Mention
from webapp.curation.models import OPEN_STATUSES, Decision
from webapp.curation.services.errors import CurationError
from webapp.curation.services.suggestions import suggest_links
from webapp.jobs import lifecycle
from webapp.jobs.lease import JobLease
from webapp.jobs.progress import ProgressRecorder
from webapp.linking.registry import ActiveLinker, get_active_linker
from webapp.linking.taggers import ActiveTagger, get_active_tagger

logger = logging.getLogger(__name__)

__all__ = ["DetectionUnavailable", "Detectors", "active_tagger", "detect_documents", "detectors_for", "find_spans",
           "find_spans_many", "redetect", "write_mentions", "write_mentions_many"]

State = Document.DetectionState
Mode = Collection.Detection
TAGGER_BATCH = 16  # tagger windows per forward pass
MERGE_RULE = "tagger-first"  # where the two disagree, the tagger's span wins (linker.detect.merge)
TRANSIENT = (OperationalError, InterfaceError)
REDETECTABLE = (State.NONE, State.DONE, State.FAILED)


class DetectionUnavailable(Exception):
    """The collection's detectors cannot run (no dictionary, no index, no tagger); the message says what to do."""


@dataclass(frozen=True)
class Detectors:
    """What detects a collection's mentions now."""

    dictionary_slug: str
    linker: ActiveLinker | None  # its index's names feed the matcher; it links the mentions found
    use_matcher: bool
    tagger: ActiveTagger | None

    @property
    def matcher_label(self) -> str:
        return self.linker.label if self.linker is not None else ""

    @property
    def label(self) -> str:
        """``Document.detection_model``: "matcher:medic@1/sparse/index-7 + tagger-run-12"."""
        parts = [f"matcher:{self.matcher_label}"] if self.use_matcher else []
        if self.tagger is not None:
            parts.append(self.tagger.label)
        return " + ".join(parts)

    def version(self, source: str) -> str:
        """``Mention.model_version`` of a span found by ``source``."""
        tagger = self.tagger.label if self.tagger is not None else ""
        return {MATCHER: self.matcher_label, TAGGER: tagger, BOTH: f"{self.matcher_label} + {tagger}"}.get(source, "")

    @property
    def mention_type(self) -> str:
        """The type detected mentions get: the tagger's, where it was trained on one type; else none."""
        types = self.tagger.mention_types if self.tagger is not None else ()
        return types[0] if len(types) == 1 else ""


def active_tagger(dictionary_slug: str) -> ActiveTagger | None:
    """The dictionary's active tagger (:func:`webapp.linking.taggers.get_active_tagger`); None when none is active."""
    return get_active_tagger(dictionary_slug)


def detectors_for(collection: Collection) -> Detectors:
    """The collection's detectors; :class:`DetectionUnavailable` (with what to do) when none can run."""
    dictionary = collection.dictionary
    if dictionary is None:
        raise DetectionUnavailable(
            f"collection {collection.slug} has no dictionary to detect its mentions with: choose one for it (Django admin) "
            "and detect again")
    mode = Mode(collection.detection)
    if mode == Mode.OFF:
        raise DetectionUnavailable(f"mention detection is off for collection {collection.slug}")
    linker = get_active_linker(dictionary.slug)
    wants_matcher = mode in (Mode.MATCHER_AND_TAGGER, Mode.MATCHER)
    tagger = active_tagger(dictionary.slug) if mode in (Mode.MATCHER_AND_TAGGER, Mode.TAGGER) else None
    if mode == Mode.TAGGER and tagger is None:
        raise DetectionUnavailable(
            f"no active tagger for dictionary {dictionary.slug}: train one and activate it on the Models page")
    if wants_matcher and linker is None and tagger is None:
        raise DetectionUnavailable(NO_INDEX.format(dictionary=dictionary.slug))
    return Detectors(dictionary.slug, linker, wants_matcher and linker is not None, tagger)


def find_spans(text: str, detectors: Detectors) -> list[Span]:
    """The detectors' spans in ``text``, merged; each says which detector found it."""
    return find_spans_many([text], detectors)[0]


def find_spans_many(texts: Sequence[str], detectors: Detectors, clock: Callable[[str], Any] | None = None) -> list[list[Span]]:
    """:func:`find_spans` of each text, the tagger reading all their windows in shared batches; ``clock(stage)``
    (a context manager, e.g. a corpus run's ``StageClock``) times the matcher and the tagger."""
    timed = clock or (lambda stage: nullcontext())
    matched: list[list[Span]] = [[] for _ in texts]
    if detectors.use_matcher and detectors.linker is not None:
        from webapp.corpus.detect import matcher_for_index

        with timed("detect:matcher"):
            table = detectors.linker.linker.table
            matcher = matcher_for_index(detectors.linker.index_version_id, table.names, table.cfg)
            matched = [matcher.find(text) for text in texts]  # source "matcher"
    if detectors.tagger is None:
        return matched
    tagger = detectors.tagger.tagger
    with timed("detect:tagger"):
        tagged = tagger.predict(list(texts), batch_size=TAGGER_BATCH)  # source "tagger"
    if not detectors.use_matcher:
        return tagged
    from linker.detect.merge import merge

    return [list(merge(m, t, rule=MERGE_RULE, tagger_knows=tagger.knows)) for m, t in zip(matched, tagged, strict=True)]


# --- the task's service ---------------------------------------------------------------------------------------


def detect_batch(job_id: int, document_ids: Iterable[int]) -> dict[str, int]:
    """A batch job (webapp.corpus.detection): run under its lease, its progress counting documents, ended with how
    many documents ended how. A batch another worker runs, or one that has ended, is left as it is."""
    with JobLease(job_id) as lease:
        if not lease.held or not lifecycle.take(job_id):
            return {"skipped": len(set(document_ids))}
        with ProgressRecorder(job_id) as progress:
            outcome = detect_documents(document_ids, progress)
            progress.flush()
        said = ", ".join(f"{count} {how}" for how, count in sorted(outcome.items()))
        lifecycle.succeed(job_id, {"summary": f"documents: {said}", **outcome})
    return outcome


def detect_documents(document_ids: Iterable[int], progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
    """Detect, write and link the mentions of the queued documents among ``document_ids``; returns how many
    documents ended ``done``, ``failed`` or were ``skipped`` (not queued: done already, or not this database's).
    ``progress(done, total)`` hears of each document."""
    outcome: Counter[str] = Counter()
    detectors: dict[int, Detectors | DetectionUnavailable] = {}  # per collection, looked up once per call
    ids = sorted(set(document_ids))
    for done, pk in enumerate(ids):
        if progress is not None:
            progress(done, len(ids))
        document = _claim(pk)
        if document is None:
            outcome["skipped"] += 1
            continue
        collection = document.collection
        if collection.detection == Mode.OFF:  # turned off since the document was queued
            _finish(pk, State.NONE, "")
            outcome["skipped"] += 1
            continue
        try:
            if collection.pk not in detectors:
                try:
                    detectors[collection.pk] = detectors_for(collection)
                except DetectionUnavailable as exc:
                    detectors[collection.pk] = exc
            found = detectors[collection.pk]
            if isinstance(found, DetectionUnavailable):
                raise found
            outcome[_detect(document, found)] += 1
        except TRANSIENT:
            raise  # the task retries; the document is still "running", which a retry claims again
        except DetectionUnavailable as exc:
            _finish(pk, State.FAILED, str(exc))
            outcome["failed"] += 1
        except Exception as exc:
            logger.exception("mention detection failed for document %s", pk)
            _finish(pk, State.FAILED, f"detection failed: {type(exc).__name__}: {exc}")
            outcome["failed"] += 1
    if progress is not None:
        progress(len(ids), len(ids))
    return dict(outcome)


def _claim(pk: int) -> Document | None:
    """The document, now ``running``, if it was queued (or left running by a worker that died)."""
    claimed = Document.objects.filter(pk=pk, detection_state__in=(State.QUEUED, State.RUNNING)).update(
        detection_state=State.RUNNING)
    if not claimed:
        return None
    return Document.objects.select_related("collection__dictionary").get(pk=pk)


def _detect(document: Document, detectors: Detectors) -> str:
    spans = find_spans(document.text, detectors)
    mention_ids = write_mentions(document.pk, spans, detectors)
    if mention_ids is None:
        return "skipped"  # finished meanwhile by another delivery of the task
    note = ""
    if detectors.linker is not None and mention_ids:
        try:
            suggest_links(Mention.objects.filter(pk__in=mention_ids), detectors.dictionary_slug)
        except TRANSIENT:
            raise
        except Exception as exc:  # the mentions are there: curators link them in the panel
            logger.exception("linking the detected mentions of document %s failed", document.pk)
            note = f"{len(mention_ids)} mentions detected, but linking them failed: {type(exc).__name__}: {exc}"
    _finish(document.pk, State.DONE, note)
    return "done"


def write_mentions(document_id: int, spans: Sequence[Span], detectors: Detectors) -> list[int] | None:
    """Make the document's undecided detector mentions exactly ``spans``, less those that overlap a mention a
    curator made or decided (or a gold one), in one transaction; returns the ids of the detector mentions now
    undecided (to link), or None when the document is no longer ``running``."""
    return write_mentions_many({document_id: spans}, detectors).get(document_id)


def write_mentions_many(spans: dict[int, Sequence[Span]], detectors: Detectors) -> dict[int, list[int]]:
    """:func:`write_mentions` of several documents in one transaction and a fixed number of queries (a corpus run's
    group); the ids per document still ``running`` (the others are left out, untouched)."""
    mention_type = detectors.mention_type
    with transaction.atomic():
        # FOR NO KEY UPDATE, in id order: two deliveries of the task wait for each other (and never deadlock); a
        # curator adding a mention does not.
        locked = Document.objects.select_for_update(no_key=True).filter(pk__in=list(spans)).order_by("pk")
        texts = {pk: text for pk, text, state in locked.values_list("pk", "text", "detection_state") if state == State.RUNNING}
        if not texts:
            return {}
        existing: dict[int, list[Mention]] = {pk: [] for pk in texts}
        for m in Mention.objects.filter(document_id__in=list(texts)).select_for_update(of=("self",)).order_by("pk"):
            existing[m.document_id].append(m)
        decided = set(Decision.objects.filter(mention__document_id__in=list(texts)).values_list("mention_id", flat=True))
        gone: list[int] = []
        new: list[Mention] = []
        ids: dict[int, list[int]] = {pk: [] for pk in texts}
        for pk, text in texts.items():
            replaceable = {
                (m.start, m.end, m.mention_type): m
                for m in existing[pk]
                if m.source == Mention.Source.DETECTOR and m.status in OPEN_STATUSES and m.pk not in decided
            }
            replaceable_ids = {m.pk for m in replaceable.values()}
            kept = [m for m in existing[pk] if m.pk not in replaceable_ids]
            wanted: dict[tuple[int, int, str], Span] = {}
            for span in sorted(spans[pk], key=lambda s: (s.start, -s.end)):
                if span.end <= span.start or any(span.start < k.end and k.start < span.end for k in kept):
                    continue
                if any(span.start < w[1] and w[0] < span.end for w in wanted):
                    continue  # detectors return no overlaps; a merge that did would break the highlight: first one wins
                wanted[(span.start, span.end, mention_type)] = span
            gone.extend(m.pk for key, m in replaceable.items() if key not in wanted)
            for key, span in wanted.items():
                current = replaceable.get(key)
                detector, version = span.source, detectors.version(span.source)
                if current is None:
                    new.append(Mention(document_id=pk, start=span.start, end=span.end, text=text[span.start : span.end],
                                       mention_type=mention_type, status=Mention.Status.PENDING,
                                       source=Mention.Source.DETECTOR, detector=detector, model_version=version))
                    continue
                if (current.detector, current.model_version) != (detector, version):
                    current.detector, current.model_version = detector, version
                    current.save(update_fields=["detector", "model_version", "updated_at"])
                ids[pk].append(current.pk)
        Mention.objects.filter(pk__in=gone).delete()
        for m in Mention.objects.bulk_create(new):
            ids[m.document_id].append(m.pk)
        Document.objects.filter(pk__in=list(texts)).update(detection_model=detectors.label[:300], detected_at=timezone.now())
    return ids


def _finish(pk: int, state: str, error: str) -> None:
    values: dict[str, Any] = {"detection_state": state, "detection_error": error.replace("\x00", "\\x00")}
    Document.objects.filter(pk=pk, detection_state=State.RUNNING).update(**values)


# --- "Detect again" -------------------------------------------------------------------------------------------


def redetect(document: Document) -> None:
    """Queue the document's detection again (an admin's "Detect again"): decided and curator mentions are kept,
    undecided detector mentions replaced. :class:`CurationError` while a detection is queued or running, or when
    the collection's detection is off."""
    collection = document.collection
    if collection.detection == Mode.OFF:
        raise CurationError(f"mention detection is off for collection {collection.slug}")
    with transaction.atomic():
        locked = Document.objects.select_for_update(no_key=True).get(pk=document.pk)
        if locked.detection_state not in REDETECTABLE:
            raise CurationError("mentions are being detected in this document already")
        mark_queued([locked.pk])
    document.detection_state, document.detection_error = State.QUEUED, ""
