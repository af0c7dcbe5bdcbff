"""A mention-tagger run's inputs: documents with every mention span marked, as of the run's snapshot.

A tagger learns where mentions are, so its training data are whole documents: each span marked is a mention,
and all text outside them "no mention". A span wrongly marked, or a mention left unmarked, teaches it wrong. So
the snapshot (as of ``run.snapshot_at``; an undone decision counts as never made, as for every run) takes:

- **every document of the run's gold collections**, with its spans: the gold mentions and the mentions curators
  added (``add_mention``), each at the span a curator last moved it to (``fix_span``), less the ones whose latest
  decision rejected them (``reject``: "not a mention"). A mention the detector made counts there only once a
  curator decided it (accepted, relinked, NIL) or moved it: an open one is left out.
- **another document of a collection of the run's dictionary that curators decided a mention of**, *only when it
  was fully reviewed* at the snapshot: no mention of it (of the run's mention types) still open, pending or
  suggested. Its spans are then its mentions as decided (rejected ones removed, moved ones where they were
  moved to): confirmed detector spans, curator-added ones, gold ones. A document with an open mention is left out
  whole, so that an unreviewed machine-made span is never taught as truth, nor the mentions a curator has not
  reached yet taught as "no mention".
- never a document of the evaluation collection, nor one with the same text (held out of training; the run
  itself is refused an evaluation collection that is, or shares documents with, a training collection:
  :func:`webapp.training.held_out.check_held_out`).

``params["mention_types"]`` (e.g. ``["Disease"]``) restricts the spans to those types; a mention a curator added
without a type is kept, since curators add mentions of the collection's dictionary (it is handed to the recipe as
one of the run's types, the first in order, so that the recipe's own type filter keeps it too). The evaluation collection's
documents, under the gold-collection rule, are the ``dev_documents`` the tagger is scored on after every epoch.
Where the spans came from is counted in ``inputs.metadata["spans"]`` (and said in the run's log):
:data:`PROVENANCE`.

The tagger's dictionary features (:mod:`linker.detect.gazetteer`) are matched from the names of the dictionary's
latest release as imported (source "dictionary"), not its curator synonyms or training-mention names: those
come from the very documents the tagger is trained on, whose mention texts the recipe adds itself, cross-fitted
so that no document is matched with its own mentions.

Documents are named by their primary key; offsets count characters of ``Document.text`` (the whole "title").
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from linker.data import GoldMention, PubTatorDocument
from linker.dictionary import NameTable
from linker.methods.base import TrainingInputs
from linker.methods.tagger_params import mention_type_filter
from linker.text import TextConfig
from webapp.artifacts.local import local_base
from webapp.corpus.models import Collection, Document, Mention
from webapp.curation.models import OPEN_STATUSES, Decision
from webapp.training.models import TrainingRun
from webapp.vocab.models import Name

__all__ = ["PROVENANCE", "SpanSnapshot", "dev_documents", "dictionary_names", "provenance_line", "tagger_inputs",
           "training_documents"]

A = Decision.Action
# What a status decision leaves the mention as.
_STATUS_AFTER = {A.ACCEPT: Mention.Status.ACCEPTED, A.RELINK: Mention.Status.RELINKED, A.NIL: Mention.Status.NIL,
                 A.REJECT: Mention.Status.REJECTED}
# The counts of inputs.metadata["spans"]: each span taught counts once, under the first that fits.
PROVENANCE = ("gold", "curator_added", "moved", "confirmed_detector", "rejected", "documents", "gold_documents",
              "curated_documents", "partly_reviewed_documents", "held_out_documents")


@dataclass
class _Mention:
    pk: int
    document_id: int
    start: int
    end: int
    mention_type: str
    status: str
    source: str
    decisions: list[tuple[datetime, int, str, str, int | None, int | None]] = field(default_factory=list)


@dataclass(frozen=True)
class _Span:
    start: int
    end: int
    mention_type: str
    kind: str  # gold, curator_added, moved, confirmed_detector


class SpanSnapshot:
    """The mentions of some documents as they stood at ``snapshot`` (their spans and statuses rebuilt from the
    decision log: a decision made later is undone in memory), of the types ``types`` (None: all)."""

    def __init__(self, document_ids: Iterable[int], snapshot: datetime, types: frozenset[str] | None) -> None:
        self.snapshot, self.types = snapshot, types
        ids = list(document_ids)
        self.mentions: dict[int, list[_Mention]] = defaultdict(list)
        by_pk: dict[int, _Mention] = {}
        rows = Mention.objects.filter(document_id__in=ids, created_at__lte=snapshot).values_list(
            "pk", "document_id", "start", "end", "mention_type", "status", "source")
        for pk, doc, start, end, mtype, status, source in rows.iterator(chunk_size=5000):
            if self._kept_type(mtype, source):
                m = _Mention(pk, doc, start, end, mtype, status, source)
                by_pk[pk] = m
                self.mentions[doc].append(m)
        decisions = Decision.objects.filter(document_id__in=ids, mention__isnull=False, undone_at__isnull=True).order_by(
            "created_at", "id").values_list("mention_id", "created_at", "id", "action", "previous_status", "previous_start",
                                            "previous_end")
        for mention_id, *decision in decisions.iterator(chunk_size=5000):
            if mention_id in by_pk:
                by_pk[mention_id].decisions.append(tuple(decision))  # type: ignore[arg-type]

    def _kept_type(self, mention_type: str, source: str) -> bool:
        return (self.types is None or mention_type in self.types
                or (not mention_type and source == Mention.Source.CURATOR))

    def status(self, m: _Mention) -> str:
        """The mention's status at the snapshot: its latest status decision by then; before its first one, the
        status that decision found; without any, the status it has (as imported or detected)."""
        status_decisions = [d for d in m.decisions if d[2] in _STATUS_AFTER]
        before = [d for d in status_decisions if d[0] <= self.snapshot]
        if before:
            return _STATUS_AFTER[A(before[-1][2])]
        if status_decisions:
            return status_decisions[0][3] or Mention.Status.PENDING
        return m.status

    def span(self, m: _Mention) -> tuple[tuple[int, int], bool]:
        """The mention's span at the snapshot, and whether a curator had moved it by then: the span the first
        later ``fix_span`` moved it from, else where it is now."""
        fixes = [d for d in m.decisions if d[2] == A.FIX_SPAN]
        later = [d for d in fixes if d[0] > self.snapshot]
        moved = any(d[0] <= self.snapshot for d in fixes)
        if later and later[0][4] is not None and later[0][5] is not None:
            return (int(later[0][4]), int(later[0][5])), moved
        return (m.start, m.end), moved

    def decided_by_then(self, document_id: int) -> bool:
        """Whether a curator had decided anything about a mention of the document (of the types) by the snapshot."""
        return any(d[0] <= self.snapshot for m in self.mentions.get(document_id, ()) for d in m.decisions)

    def fully_reviewed(self, document_id: int) -> bool:
        return all(self.status(m) not in OPEN_STATUSES for m in self.mentions.get(document_id, ()))

    def spans(self, document_id: int, gold: bool, counts: Counter[str]) -> list[_Span]:
        """The document's spans to teach (module docstring); ``gold``: a document of a gold collection of the run,
        whose open detector spans are left out (elsewhere the document is fully reviewed: none is open)."""
        out: dict[tuple[int, int], _Span] = {}
        for m in sorted(self.mentions.get(document_id, ()), key=lambda m: (m.start, m.end, m.pk)):
            status = self.status(m)
            (start, end), moved = self.span(m)
            if status == Mention.Status.REJECTED:
                counts["rejected"] += 1
                continue
            if m.source == Mention.Source.CURATOR:
                kind = "curator_added"
            elif moved:
                kind = "moved"
            elif m.source == Mention.Source.GOLD:
                kind = "gold"
            elif gold and status in OPEN_STATUSES:
                continue  # a detector's span nobody has looked at
            else:
                kind = "confirmed_detector"
            mention_type = m.mention_type or (min(self.types) if self.types else "")
            out.setdefault((start, end), _Span(start, end, mention_type, kind))
        spans = sorted(out.values(), key=lambda s: (s.start, s.end))
        counts.update(s.kind for s in spans)
        return spans


def _text_hash(text: str) -> str:
    return hashlib.md5(text.encode("utf-8")).hexdigest()  # noqa: S324 (not security: finding one text twice)


def _plain(doc: Document, spans: list[_Span]) -> PubTatorDocument:
    mentions = tuple(GoldMention(start=s.start, end=s.end, text=doc.text[s.start:s.end], mention_type=s.mention_type,
                                 ids_raw="", parts=()) for s in spans)
    return PubTatorDocument(pmid=str(doc.pk), title=doc.text, abstract="", mentions=mentions)


def training_documents(run: TrainingRun, types: frozenset[str] | None = None) -> tuple[list[PubTatorDocument], Counter[str]]:
    """The run's training documents with their spans (module docstring), and where the spans came from."""
    snapshot = run.snapshot_at or run.created_at
    counts: Counter[str] = Counter({k: 0 for k in PROVENANCE})
    gold_ids = set(run.collections.values_list("pk", flat=True))
    held_out = {run.eval_collection_id} - {None}
    held_texts = {_text_hash(t) for t in Document.objects.filter(collection_id__in=held_out).values_list("text", flat=True)}
    gold_docs = list(Document.objects.filter(collection_id__in=gold_ids, created_at__lte=snapshot).order_by("pk"))
    curated_ids = set(Decision.objects.filter(
        undone_at__isnull=True, created_at__lte=snapshot, mention__isnull=False,
        document__collection__in=Collection.objects.filter(dictionary_id=run.dictionary_id, is_workspace=False),
    ).exclude(document__collection_id__in=gold_ids).values_list("document_id", flat=True).distinct())
    curated_docs = []
    for doc in Document.objects.filter(pk__in=curated_ids).order_by("pk"):
        if doc.collection_id in held_out or _text_hash(doc.text) in held_texts:
            counts["held_out_documents"] += 1
        else:
            curated_docs.append(doc)
    snapshot_spans = SpanSnapshot([d.pk for d in gold_docs + curated_docs], snapshot, types)
    out = [_plain(doc, snapshot_spans.spans(doc.pk, True, counts)) for doc in gold_docs]
    counts["gold_documents"] = len(out)
    for doc in curated_docs:
        if not snapshot_spans.decided_by_then(doc.pk):
            continue  # decisions only about mentions of other types
        if not snapshot_spans.fully_reviewed(doc.pk):
            counts["partly_reviewed_documents"] += 1
            continue
        out.append(_plain(doc, snapshot_spans.spans(doc.pk, False, counts)))
        counts["curated_documents"] += 1
    counts["documents"] = len(out)
    return out, counts


def dev_documents(run: TrainingRun, types: frozenset[str] | None = None) -> list[PubTatorDocument]:
    """The evaluation collection's documents with their spans, by the gold-collection rule."""
    if run.eval_collection_id is None:
        return []
    snapshot = run.snapshot_at or run.created_at
    docs = list(Document.objects.filter(collection_id=run.eval_collection_id, created_at__lte=snapshot).order_by("pk"))
    spans = SpanSnapshot([d.pk for d in docs], snapshot, types)
    ignored: Counter[str] = Counter()
    return [_plain(doc, spans.spans(doc.pk, True, ignored)) for doc in docs]


def provenance_line(counts: dict[str, Any]) -> str:
    """The log's line: "spans: 12 gold, 2 curator-added, 1 moved, 3 confirmed detector spans; 1 rejected; ..."."""
    c = {k: int(counts.get(k, 0)) for k in PROVENANCE}
    return (f"spans: {c['gold']} gold, {c['curator_added']} curator-added, {c['moved']} moved, "
            f"{c['confirmed_detector']} confirmed detector spans; {c['rejected']} rejected left out; "
            f"{c['documents']} documents ({c['gold_documents']} of the gold collections, {c['curated_documents']} "
            f"fully reviewed elsewhere; {c['partly_reviewed_documents']} partly reviewed and "
            f"{c['held_out_documents']} held out left out)")


def tagger_inputs(run: TrainingRun, out: Path) -> TrainingInputs:
    """The recipe's inputs for the tagger: the training documents, the evaluation documents, the base model,
    the mention types, and the provenance counts in ``metadata``."""
    types = mention_type_filter(run.params.get("mention_types"))
    documents, counts = training_documents(run, types)
    dev = dev_documents(run, types)
    metadata = {
        "training_run": run.pk, "label": f"{run.method}-run-{run.pk}", "dictionary": run.dictionary.slug, "mention_types": sorted(types or ()),
        "snapshot_at": (run.snapshot_at or run.created_at).isoformat(),
        "spans": dict(counts) | {"dev_documents": len(dev), "dev_spans": sum(len(d.mentions) for d in dev)},
    }
    names = dictionary_names(run)
    metadata["dictionary_names"] = len(names)
    return TrainingInputs(
        table=NameTable.from_records([], TextConfig()), pairs=(), concept_counts={}, out=out,
        base_model=local_base(run.base_model), metadata=metadata, documents=documents, mention_types=types,
        dev_documents=dev, names=names,
    )


def dictionary_names(run: TrainingRun) -> list[str]:
    """The names of the dictionary's latest release as imported, as written (the tagger's dictionary features);
    empty when it has no release."""
    version = run.dictionary.latest_version()
    if version is None:
        return []
    rows = Name.objects.filter(concept__version=version, concept__obsolete=False, source=Name.Source.DICTIONARY)
    return list(rows.order_by("text").values_list("text", flat=True).distinct().iterator(chunk_size=20000))
