"""Model suggestions: the active linker's top-k candidates, stored as a mention's model links.

Suggestions are stored by writers of two kinds, one rule (:func:`store_many_suggestions`): the background task
links a collection's open mentions in batches (:func:`suggest_for_collection`; queued by an index promotion and the
dashboard), and a curator's POST on a mention stores the ranking its panel shows (:func:`store_ranking`: before a
decision, so the rank recorded with it is the rank the curator saw, and with the panel that answers adding a mention,
fixing a span or undoing). The panel's GET only reads (:func:`panel_ranking`): it links its mention live, the
ranking kept in the process while the index is unchanged and the rest of the document prefetched (:mod:`.rankings`,
a cache). Decided mentions keep the suggestions they were decided on.
Both read the linker through the one door, :func:`webapp.linking.registry.get_active_linker`, so synonyms
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
from typing import TYPE_CHECKING

from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from linker.calibration import mention_confidence, part_features
from linker.rerank.results import LinkedMention
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.curation.models import OPEN_STATUSES, Decision
from webapp.curation.services.errors import CurationError
from webapp.curation.services.rankings import link_mention, link_now, prefetch_document
from webapp.linking.registry import ActiveLinker, get_active_linker
from webapp.projects.concept_filter import ConceptFilter, filter_for_document
from webapp.vocab.models import Concept, DictionaryVersion

if TYPE_CHECKING:  # heavy (torch, faiss): imported where the work runs, not when Django loads (issue #45)
    from linker.retrieval import Candidate

SUGGESTIONS_K = 10  # suggestions stored per mention part: the panel's list, and enough to know margins
# Under a project's concept filter the linker is asked for this many times k candidates, so that the panel still
# shows about k once those outside the filter are dropped (a narrow filter may leave fewer).
FILTER_WIDENING = 5
# Stored suggestions of this many mentions refresh the planner's statistics (as a large import does).
ANALYZE_AFTER_MENTIONS = 1000


@dataclass(frozen=True)
class PanelRanking:
    """The active linker's candidates for one mention, as the panel shows them (:func:`store_ranking` stores them)."""

    active: ActiveLinker
    linked: LinkedMention  # candidates ranked within each part, with their types and homonyms where known
    part_queries: list[str] | None  # the linker's own parts, where it split a composite the source did not
    confidences: list[float] = field(default_factory=list)  # per part: P(top-1 right); empty: uncalibrated linker
    concept_filter: ConceptFilter | None = None  # the project's filter the candidates were restricted to
    # Linked just now, asking the linker for this many candidates (0: the ranking was kept from before): the
    # document's other open mentions may then be prefetched (:func:`prefetch_rest_of_document`).
    linked_now_k: int = 0

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
    linkings = link_now(active, mentions, document_text, k)
    return [one.queries for one in linkings], [one.linked for one in linkings]


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
    """Link one mention live (so synonyms added a moment ago count), as its panel shows it. Writes nothing: the
    ranking is kept in this process's cache (:mod:`.rankings`); :func:`store_ranking` stores it on a POST.

    ``mention`` comes with document__collection__dictionary. None without an active index (the panel shows stored
    suggestions then).
    """
    dictionary = mention.document.collection.dictionary
    active = get_active_linker(dictionary.slug) if dictionary is not None else None
    if active is None:
        return None
    concept_filter = filter_for_document(mention.document)
    # Cached while the index is unchanged, and the document's other open mentions prefetched (services.rankings).
    asked = k if concept_filter is None else k * FILTER_WIDENING
    linking, linked_now = link_mention(active, mention, mention.document.text, asked)
    queries, linked = [linking.queries], linking.linked
    if concept_filter is not None:
        linked = within_filter(linked, concept_filter.allows_id, k)
    ranked = linked.candidates
    confidences = part_confidences(active, queries, [linked])[0]
    # The linker's own parts, where it split a composite the source did not.
    split = max(1, len(mention.part_texts)) < max((c.part for c in ranked), default=0) + 1
    return PanelRanking(active, linked, queries[0] if split else None, confidences, concept_filter,
                        asked if linked_now else 0)


def store_ranking(mention: Mention, ranking: PanelRanking | None, *, locked: bool = False) -> bool:
    """Store the ranking a panel shows as the mention's suggestions, where the mention is open and they differ
    (a POST's work: in a decision's transaction, so the rank it records is the rank shown; after adding a mention,
    fixing a span or undoing). ``locked``: the caller's transaction holds the mention's row lock already (a
    decision). Returns whether anything was written; ``mention`` gets its new status and ``updated_at``."""
    if ranking is None or mention.status not in OPEN_STATUSES:
        return False
    active, linked = ranking.active, ranking.linked
    if locked:
        return _store_shown(mention, ranking)
    if not _differs(mention, linked, active.label):
        return False
    with transaction.atomic():
        row = Mention.objects.select_for_update(of=("self",)).get(pk=mention.pk)
        if not _store_shown(row, ranking):
            return False
    mention.status, mention.updated_at = row.status, row.updated_at
    return True


def _store_shown(mention: Mention, ranking: PanelRanking) -> bool:
    """:func:`store_ranking` on a mention locked in the current transaction (its stored links are compared there)."""
    active, linked = ranking.active, ranking.linked
    pks = concept_pks(active.dictionary_version, {c.concept_id for c in linked.candidates})
    return store_suggestions(mention, linked.candidates, active.label, pks, conflicts(linked), ranking.confidences)


def prefetch_rest_of_document(mention: Mention, ranking: PanelRanking | None) -> None:
    """After a panel that linked its mention just now has been rendered: link the rest of its document in the
    background (:func:`webapp.curation.services.rankings.prefetch_document`), for the curator's next panels."""
    if ranking is not None and ranking.linked_now_k:
        prefetch_document(ranking.active, mention, mention.document.text, ranking.linked_now_k)


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


@dataclass(frozen=True)
class MentionSuggestions:
    """What to store as one mention's suggestions: its ranked ``candidates`` (ranked per part), per candidate whether
    its concept's known types conflict with the mention's predicted types (``type_conflicts``, empty: none; the
    review queue's "type conflicts" reads rank 1's), and per part the calibrated probability that rank 1 is right
    (``confidences``, empty: an uncalibrated linker; it goes on each part's rank-1 link)."""

    mention: Mention
    candidates: Sequence[Candidate]
    type_conflicts: Sequence[bool] = ()
    confidences: Sequence[float] = ()

    def wanted(self) -> list[tuple[int, int, str, float, bool]]:
        """(part, rank in part, concept id, score, type conflict) per candidate, as the links will hold them."""
        flags = list(self.type_conflicts) or [False] * len(self.candidates)
        rank_in_part: dict[int, int] = {}
        out: list[tuple[int, int, str, float, bool]] = []
        for c, conflict in zip(self.candidates, flags, strict=True):
            rank_in_part[c.part] = rank_in_part.get(c.part, 0) + 1
            out.append((c.part, rank_in_part[c.part], c.concept_id, round(float(c.score), 6), bool(conflict)))
        return out


def store_suggestions(
    mention: Mention, candidates: Sequence[Candidate], label: str, pks: dict[str, int], type_conflicts: Sequence[bool] = (),
    confidences: Sequence[float] = (),
) -> bool:
    """Make one mention's model links exactly ``candidates`` unless they are already (:func:`store_many_suggestions`).
    Returns whether anything was written."""
    return bool(store_many_suggestions([MentionSuggestions(mention, candidates, type_conflicts, confidences)], label, pks))


def store_many_suggestions(items: Sequence[MentionSuggestions], label: str, pks: dict[str, int]) -> int:
    """Make each mention's model links exactly its candidates unless they are already; returns how many changed.

    Only open mentions (pending or suggested) are written: a decided mention keeps the suggestions it was decided
    on. A pending mention given candidates becomes "suggested". ``pks`` maps the candidates' concept ids to
    concept rows (ids missing from it are kept as references only). Call inside a transaction with the mentions
    locked; the mention objects get their new status and ``updated_at``.

    A document's mentions are stored together, in a fixed number of queries whatever their count (read the
    stored links, delete the changed ones, insert, promote the pending, keep their decisions undoable): mention by
    mention, a 5 MB note's 1,547 detected mentions took five queries each.
    """
    wanted = {it.mention.pk: it.wanted() for it in items if it.mention.status in OPEN_STATUSES}
    if not wanted:
        return 0
    stored: dict[int, list[tuple[int, int, str, float, bool, str]]] = {pk: [] for pk in wanted}
    for mention_id, part, rank, ref, score, conflict, version in (
        Link.objects.filter(mention_id__in=wanted, origin=Link.Origin.MODEL)
        .order_by("mention_id", "part", "rank", "id")
        .values_list("mention_id", "part", "rank", "concept_ref", "score", "type_conflict", "model_version")
    ):
        stored[mention_id].append((part, rank, ref, round(score or 0.0, 6), conflict, version))
    changed = [it for it in items if it.mention.pk in wanted
               and stored[it.mention.pk] != [(*w, label) for w in wanted[it.mention.pk]]]
    if not changed:
        return 0
    Link.objects.filter(mention_id__in=[it.mention.pk for it in changed], origin=Link.Origin.MODEL).delete()
    Link.objects.bulk_create(
        [
            Link(mention=it.mention, part=part, concept_id=pks.get(cid), concept_ref=cid, origin=Link.Origin.MODEL,
                 score=score, rank=rank, model_version=label, type_conflict=conflict,
                 confidence=it.confidences[part] if rank == 1 and part < len(it.confidences) else None)
            for it in changed
            for part, rank, cid, score, conflict in wanted[it.mention.pk]
        ]
    )
    _promote_pending([it.mention for it in changed if it.mention.status == Mention.Status.PENDING and wanted[it.mention.pk]])
    return len(changed)


def _promote_pending(mentions: Sequence[Mention]) -> None:
    """Pending mentions that now have suggestions become "suggested". Not a curator's change: the decision that left
    a mention open (added it, fixed its span) stays undoable, so its recorded result time follows the mention's."""
    if not mentions:
        return
    seen = {m.pk: m.updated_at for m in mentions}
    now = timezone.now()
    Mention.objects.filter(pk__in=seen).update(status=Mention.Status.SUGGESTED, updated_at=now)
    for m in mentions:
        m.status, m.updated_at = Mention.Status.SUGGESTED, now
    current = [
        pk for pk, mention_id, result_at in
        Decision.objects.filter(mention_id__in=seen, undone_at__isnull=True).values_list("pk", "mention_id", "result_updated_at")
        if result_at == seen[mention_id]
    ]
    if current:
        Decision.objects.filter(pk__in=current).update(result_updated_at=now)


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
    for offset in range(0, len(document_ids), batch_documents):
        if updated - analysed >= ANALYZE_AFTER_MENTIONS:
            analyse_links()
            analysed = updated
        batch = document_ids[offset : offset + batch_documents]
        with transaction.atomic():
            for document in Document.objects.filter(pk__in=batch).select_related("collection").order_by("pk"):
                # OF self: ``mentions`` may join the documents (by collection), whose rows must stay unlocked: a
                # decision's log row, an added mention, an import's document all reference them.
                rows = list(
                    mentions.filter(document=document, status__in=OPEN_STATUSES).select_for_update(of=("self",)).order_by("pk")
                )
                if not rows:
                    continue
                concept_filter = filter_for_document(document)  # a project over some documents narrows only those
                if concept_filter is None:
                    queries, linked = link_in_document(active, rows, document.text, k)
                else:
                    queries, linked = link_in_document(active, rows, document.text, k * FILTER_WIDENING)
                    linked = [within_filter(one, concept_filter.allows_id, k) for one in linked]
                pks = concept_pks(active.dictionary_version, {c.concept_id for one in linked for c in one.candidates})
                confidences = part_confidences(active, queries, linked)
                updated += store_many_suggestions(
                    [MentionSuggestions(m, one.candidates, conflicts(one), conf)
                     for m, one, conf in zip(rows, linked, confidences, strict=True)],
                    active.label, pks,
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
