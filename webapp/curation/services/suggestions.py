"""Model suggestions: the active linker's top-k candidates, stored as a mention's model links.

Two writers, one rule (:func:`store_suggestions`): the background task links a collection's open mentions in
batches (:func:`suggest_for_collection`), and the candidate panel links the mention it shows live
(:func:`panel_ranking`), storing what it shows when that differs from what is stored, so the rank recorded
with a decision is the rank the curator saw. Decided mentions keep the suggestions they were decided on.
Both read the linker through the one door, :func:`webapp.training.registry.get_active_linker`, so synonyms
curators added in any process count, and both link each mention in its document
(:meth:`linker.linker.Linker.link_in_context`): with a LATTE re-ranker the order and the scores stored are
the re-ranker's, and each suggestion keeps whether its concept's known types conflict with the mention's.
Mentions under a project's concept filter (:mod:`webapp.projects.concept_filter`) get only candidates it allows:
the linker is asked for more and the rest dropped, and stored suggestions made before the filter changed are
replaced by the filtered ranking as any outdated suggestions are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from django.db import connection, transaction
from django.db.models import QuerySet

from linker.calibration import mention_confidence, part_features
from linker.rerank import MentionSpan
from linker.rerank.results import LinkedMention
from linker.retrieval import Candidate
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.curation.models import OPEN_STATUSES, Decision
from webapp.curation.services.decisions import CurationError
from webapp.projects.concept_filter import ConceptFilter, filter_for_collection
from webapp.training.registry import ActiveLinker, get_active_linker
from webapp.vocab.models import Concept, DictionaryVersion

SUGGESTIONS_K = 10  # suggestions stored per mention part: the panel's list, and enough to know margins
# Under a project's concept filter the linker is asked for this many times k candidates, so that the panel still
# shows about k once those outside the filter are dropped (a narrow filter may leave fewer).
FILTER_WIDENING = 5
# Stored suggestions of this many mentions refresh the planner's statistics (as a large import does).
ANALYZE_AFTER_MENTIONS = 1000


@dataclass(frozen=True)
class PanelRanking:
    """The active linker's candidates for one mention, as the panel shows them (and as they are now stored)."""

    active: ActiveLinker
    linked: LinkedMention  # candidates ranked within each part, with their types and homonyms where known
    part_queries: list[str] | None  # the linker's own parts, where it split a composite the source did not
    stored: bool  # these candidates replaced the stored suggestions just now (the mention may have become "suggested")
    confidences: list[float] = field(default_factory=list)  # per part: P(top-1 right); empty: uncalibrated linker
    concept_filter: ConceptFilter | None = None  # the project's filter the candidates were restricted to

    @property
    def confidence(self) -> float | None:
        return mention_confidence(self.confidences)

    @property
    def candidates(self) -> list[Candidate]:
        return self.linked.candidates


def link_in_document(
    active: ActiveLinker, mentions: Sequence[Mention], document_text: str, k: int
) -> tuple[list[list[str]], list[LinkedMention]]:
    """The mentions of one document linked in their context (their offsets in ``document_text``), with the queries
    the linker made of them (one per part: abbreviations expanded, composites split), computed once for both."""
    spans = [MentionSpan(m.text, m.start, m.end) for m in mentions]
    queries = active.linker.queries_for([m.text for m in mentions], document_text)
    return queries, active.linker.link_in_context(spans, document_text=document_text, k=k, queries=queries)


def part_confidences(active: ActiveLinker, queries: Sequence[Sequence[str]],
                     linked: Sequence[LinkedMention]) -> list[list[float]]:
    """Per mention, per part (its ``queries``, as :func:`link_in_document` gives them): the calibrated probability
    that its top-1 is right (:mod:`linker.calibration`); empty lists when the active linker has no calibration."""
    linker = active.linker
    calibration = linker.calibration
    if calibration is None:
        return [[] for _ in linked]
    normalize = linker.preprocessor.normalize
    return [
        [calibration.probability(part_features(q, [c for c in one.candidates if c.part == p], normalize))
         for p, q in enumerate(qs)]
        for qs, one in zip(queries, linked, strict=True)
    ]


def conflicts(linked: LinkedMention) -> list[bool]:
    """Per candidate: whether its known types conflict with the mention's predicted ones (False without a re-ranker)."""
    return [t.type_conflict for t in linked.typing] if linked.typing is not None else [False] * len(linked.candidates)


def panel_ranking(mention: Mention, k: int = SUGGESTIONS_K) -> PanelRanking | None:
    """Link one mention live (so synonyms added a moment ago count) and store the result if it is new.

    ``mention`` comes with document__collection__dictionary; its status and version are updated in place when
    suggestions are stored. None without an active index (the panel shows stored suggestions then).
    """
    dictionary = mention.document.collection.dictionary
    active = get_active_linker(dictionary.slug) if dictionary is not None else None
    if active is None:
        return None
    concept_filter = filter_for_collection(mention.document.collection)
    if concept_filter is None:
        queries, (linked,) = link_in_document(active, [mention], mention.document.text, k)
    else:
        queries, (linked,) = link_in_document(active, [mention], mention.document.text, k * FILTER_WIDENING)
        linked = within_filter(linked, concept_filter.allows_id, k)
    ranked = linked.candidates
    confidences = part_confidences(active, queries, [linked])[0]
    stored = False
    if mention.status in OPEN_STATUSES and _differs(mention, linked, active.label):
        pks = concept_pks(active.dictionary_version, {c.concept_id for c in ranked})
        with transaction.atomic():
            locked = Mention.objects.select_for_update().get(pk=mention.pk)
            if store_suggestions(locked, ranked, active.label, pks, conflicts(linked), confidences):
                mention.status, mention.updated_at = locked.status, locked.updated_at
                stored = True
    # The linker's own parts, where it split a composite the source did not.
    split = max(1, len(mention.part_texts)) < max((c.part for c in ranked), default=0) + 1
    return PanelRanking(active, linked, queries[0] if split else None, stored, confidences, concept_filter)


def within_filter(linked: LinkedMention, allows: Callable[[str], bool], k: int) -> LinkedMention:
    """The candidates a project's concept filter allows (:mod:`webapp.projects.concept_filter`), at most ``k`` per
    part in their order, their homonyms and types kept aligned (homonyms outside the filter dropped too)."""
    keep: list[int] = []
    per_part: dict[int, int] = {}
    for i, c in enumerate(linked.candidates):
        if allows(c.concept_id) and per_part.get(c.part, 0) < k:
            per_part[c.part] = per_part.get(c.part, 0) + 1
            keep.append(i)
    return replace(
        linked,
        candidates=[linked.candidates[i] for i in keep],
        homonyms=[tuple(h for h in linked.homonyms[i] if allows(h)) for i in keep],
        typing=[linked.typing[i] for i in keep] if linked.typing is not None else None,
    )


def _differs(mention: Mention, linked: LinkedMention, label: str) -> bool:
    """Whether the stored suggestions are not the ranked candidates (read without a lock; rechecked under one)."""
    stored = list(mention.links.filter(origin=Link.Origin.MODEL).order_by("part", "rank", "-created_at", "-id"))
    if len(stored) != len(linked.candidates):
        return True
    return any(
        link.concept_ref != c.concept_id or link.part != c.part or link.model_version != label
        or round(link.score or 0.0, 6) != round(float(c.score), 6) or link.type_conflict != conflict
        for link, c, conflict in zip(stored, linked.candidates, conflicts(linked), strict=True)
    )


def concept_pks(version: DictionaryVersion, concept_ids: Iterable[str]) -> dict[str, int]:
    ids = set(concept_ids)
    return dict(Concept.objects.filter(version=version, concept_id__in=ids).values_list("concept_id", "pk")) if ids else {}


def store_suggestions(
    mention: Mention, candidates: Sequence[Candidate], label: str, pks: dict[str, int], type_conflicts: Sequence[bool] = (),
    confidences: Sequence[float] = (),
) -> bool:
    """Make the mention's model links exactly ``candidates`` (ranked per part) unless they are already.

    ``type_conflicts`` (aligned with ``candidates``; empty: none) marks the suggestions whose concept's known
    types conflict with the mention's predicted types: the review queue's "type conflicts" reads rank 1's.
    ``confidences`` (per part; empty: an uncalibrated linker) go on each part's rank-1 link.
    Only for open mentions (pending or suggested): a decided mention keeps the suggestions it was decided on.
    Call inside a transaction with the mention locked. Returns whether anything was written.
    """
    if mention.status not in OPEN_STATUSES:
        return False
    flags = list(type_conflicts) or [False] * len(candidates)
    wanted: list[tuple[int, int, str, float, bool]] = []
    rank_in_part: dict[int, int] = {}
    for c, conflict in zip(candidates, flags, strict=True):
        rank_in_part[c.part] = rank_in_part.get(c.part, 0) + 1
        wanted.append((c.part, rank_in_part[c.part], c.concept_id, round(float(c.score), 6), bool(conflict)))
    stored = [
        (link.part, link.rank, link.concept_ref, round(link.score or 0.0, 6), link.type_conflict, link.model_version)
        for link in mention.links.filter(origin=Link.Origin.MODEL).order_by("part", "rank", "id")
    ]
    if stored == [(*w, label) for w in wanted]:
        return False
    mention.links.filter(origin=Link.Origin.MODEL).delete()
    Link.objects.bulk_create(
        [
            Link(mention=mention, part=part, concept_id=pks.get(cid), concept_ref=cid, origin=Link.Origin.MODEL,
                 score=score, rank=rank, model_version=label, type_conflict=conflict,
                 confidence=confidences[part] if rank == 1 and part < len(confidences) else None)
            for part, rank, cid, score, conflict in wanted
        ]
    )
    if mention.status == Mention.Status.PENDING and wanted:
        seen = mention.updated_at
        mention.status = Mention.Status.SUGGESTED
        mention.save(update_fields=["status", "updated_at"])
        # Not a curator's change: the decision that left the mention open (added it, fixed its span) stays undoable.
        Decision.objects.filter(mention=mention, undone_at__isnull=True, result_updated_at=seen).update(result_updated_at=mention.updated_at)
    return True


def suggest_links(mentions: QuerySet[Mention], dictionary_slug: str, k: int = SUGGESTIONS_K, batch_documents: int = 50) -> int:
    """Run the active linker over the open mentions given; store the top ``k`` per part. Returns mentions updated.

    Documents are linked one by one (abbreviations resolve from each document's text) and committed in
    batches, so a long run makes progress visible and a crash loses little.

    Every :data:`ANALYZE_AFTER_MENTIONS` mentions stored, the link and mention tables are analysed: statistics
    taken before (by the import) say the collection has no model links, so the planner reads a mention's
    suggestions through the (origin, concept) index, every model link of the table for each mention: this
    run then grew quadratically (BC5CDR's 9,591 mentions: 8 minutes on a server without autovacuum), and so
    did every panel and decision until the next ANALYZE (35-70 ms per query on 100K links).
    """
    from webapp.curation.services.auto_accept import auto_accept, thresholds

    active = get_active_linker(dictionary_slug)
    if active is None:
        raise CurationError(f"no active index for the dictionary {dictionary_slug}: build and activate one first")
    document_ids = sorted(set(mentions.filter(status__in=OPEN_STATUSES).values_list("document_id", flat=True)))
    updated = analysed = 0
    auto = thresholds(document_ids) if active.linker.calibration is not None else {}
    filters: dict[int, ConceptFilter | None] = {}  # per collection: a workspace's project's concept filter
    for offset in range(0, len(document_ids), batch_documents):
        if updated - analysed >= ANALYZE_AFTER_MENTIONS:
            analyse_links()
            analysed = updated
        batch = document_ids[offset : offset + batch_documents]
        with transaction.atomic():
            for document in Document.objects.filter(pk__in=batch).order_by("pk"):
                # OF self: ``mentions`` may join the documents (by collection), whose rows must stay unlocked: a
                # decision's log row, an added mention, an import's document all reference them.
                rows = list(
                    mentions.filter(document=document, status__in=OPEN_STATUSES).select_for_update(of=("self",)).order_by("pk")
                )
                if not rows:
                    continue
                if document.collection_id not in filters:
                    filters[document.collection_id] = filter_for_collection(document.collection)
                concept_filter = filters[document.collection_id]
                if concept_filter is None:
                    queries, linked = link_in_document(active, rows, document.text, k)
                else:
                    queries, linked = link_in_document(active, rows, document.text, k * FILTER_WIDENING)
                    linked = [within_filter(one, concept_filter.allows_id, k) for one in linked]
                pks = concept_pks(active.dictionary_version, {c.concept_id for one in linked for c in one.candidates})
                confidences = part_confidences(active, queries, linked)
                updated += sum(
                    store_suggestions(m, one.candidates, active.label, pks, conflicts(one), conf)
                    for m, one, conf in zip(rows, linked, confidences, strict=True)
                )
        # After the batch commits: each auto-accept is a decision of its own (its transaction, its log row).
        if any(doc in auto for doc in batch):
            auto_accept([doc for doc in batch if doc in auto], auto)
    if updated >= ANALYZE_AFTER_MENTIONS and updated > analysed:
        analyse_links()
    return updated


def analyse_links() -> None:
    """Fresh planner statistics for mentions and links, after many suggestions were stored."""
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE corpus_mention; ANALYZE corpus_link")


def suggest_for_collection(collection_id: int, k: int = SUGGESTIONS_K) -> int:
    collection = Collection.objects.select_related("dictionary").get(pk=collection_id)
    if collection.dictionary is None:
        raise CurationError(f"collection {collection.slug} has no dictionary to link to")
    return suggest_links(Mention.objects.filter(document__collection=collection), collection.dictionary.slug, k)
