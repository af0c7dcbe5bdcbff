"""Model suggestions: the active linker's top-k candidates, stored as a mention's model links.

Two writers, one rule (:func:`store_suggestions`): the background task links a collection's open mentions in
batches (:func:`suggest_for_collection`), and the candidate panel links the mention it shows live
(:func:`panel_ranking`), storing what it shows when that differs from what is stored, so the rank recorded
with a decision is the rank the curator saw. Decided mentions keep the suggestions they were decided on.
Both read the linker through the one door, :func:`webapp.training.registry.get_active_linker`, so synonyms
curators added in any process count.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db import transaction
from django.db.models import QuerySet

from linker.retrieval import Candidate
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.curation.models import OPEN_STATUSES, Decision
from webapp.curation.services.decisions import CurationError
from webapp.training.registry import ActiveLinker, get_active_linker
from webapp.vocab.models import Concept, DictionaryVersion

SUGGESTIONS_K = 10  # suggestions stored per mention part: the panel's list, and enough to know margins


@dataclass(frozen=True)
class PanelRanking:
    """The active linker's candidates for one mention, as the panel shows them (and as they are now stored)."""

    active: ActiveLinker
    candidates: list[Candidate]  # ranked within each part
    part_queries: list[str] | None  # the linker's own parts, where it split a composite the source did not
    stored: bool  # these candidates replaced the stored suggestions just now (the mention may have become "suggested")


def panel_ranking(mention: Mention, k: int = SUGGESTIONS_K) -> PanelRanking | None:
    """Link one mention live (so synonyms added a moment ago count) and store the result if it is new.

    ``mention`` comes with document__collection__dictionary; its status and version are updated in place when
    suggestions are stored. None without an active index (the panel shows stored suggestions then).
    """
    dictionary = mention.document.collection.dictionary
    active = get_active_linker(dictionary.slug) if dictionary is not None else None
    if active is None:
        return None
    ranked = active.linker.link_mentions([mention.text], document_text=mention.document.text, k=k)[0]
    stored = False
    if mention.status in OPEN_STATUSES and _differs(mention, ranked, active.label):
        pks = concept_pks(active.dictionary_version, {c.concept_id for c in ranked})
        with transaction.atomic():
            locked = Mention.objects.select_for_update().get(pk=mention.pk)
            if store_suggestions(locked, ranked, active.label, pks):
                mention.status, mention.updated_at = locked.status, locked.updated_at
                stored = True
    queries = None
    if max(1, len(mention.part_texts)) < max((c.part for c in ranked), default=0) + 1:
        queries = active.linker.queries_for([mention.text], document_text=mention.document.text)[0]
    return PanelRanking(active, ranked, queries, stored)


def _differs(mention: Mention, ranked: Sequence[Candidate], label: str) -> bool:
    """Whether the stored suggestions are not the ranked candidates (read without a lock; rechecked under one)."""
    stored = list(mention.links.filter(origin=Link.Origin.MODEL).order_by("part", "rank", "-created_at", "-id"))
    if len(stored) != len(ranked):
        return True
    return any(
        link.concept_ref != c.concept_id or link.part != c.part or link.model_version != label
        or round(link.score or 0.0, 6) != round(float(c.score), 6)
        for link, c in zip(stored, ranked, strict=True)
    )


def concept_pks(version: DictionaryVersion, concept_ids: Iterable[str]) -> dict[str, int]:
    ids = set(concept_ids)
    return dict(Concept.objects.filter(version=version, concept_id__in=ids).values_list("concept_id", "pk")) if ids else {}


def store_suggestions(mention: Mention, candidates: Sequence[Candidate], label: str, pks: dict[str, int]) -> bool:
    """Make the mention's model links exactly ``candidates`` (ranked per part) unless they are already.

    Only for open mentions (pending or suggested): a decided mention keeps the suggestions it was decided on.
    Call inside a transaction with the mention locked. Returns whether anything was written.
    """
    if mention.status not in OPEN_STATUSES:
        return False
    wanted: list[tuple[int, int, str, float]] = []
    rank_in_part: dict[int, int] = {}
    for c in candidates:
        rank_in_part[c.part] = rank_in_part.get(c.part, 0) + 1
        wanted.append((c.part, rank_in_part[c.part], c.concept_id, round(float(c.score), 6)))
    stored = [
        (link.part, link.rank, link.concept_ref, round(link.score or 0.0, 6), link.model_version)
        for link in mention.links.filter(origin=Link.Origin.MODEL).order_by("part", "rank", "id")
    ]
    if stored == [(*w, label) for w in wanted]:
        return False
    mention.links.filter(origin=Link.Origin.MODEL).delete()
    Link.objects.bulk_create(
        [
            Link(mention=mention, part=part, concept_id=pks.get(cid), concept_ref=cid, origin=Link.Origin.MODEL,
                 score=score, rank=rank, model_version=label)
            for part, rank, cid, score in wanted
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
    """
    active = get_active_linker(dictionary_slug)
    if active is None:
        raise CurationError(f"no active index for the dictionary {dictionary_slug}: build and activate one first")
    document_ids = sorted(set(mentions.filter(status__in=OPEN_STATUSES).values_list("document_id", flat=True)))
    updated = 0
    for offset in range(0, len(document_ids), batch_documents):
        with transaction.atomic():
            for document in Document.objects.filter(pk__in=document_ids[offset : offset + batch_documents]).order_by("pk"):
                rows = list(mentions.filter(document=document, status__in=OPEN_STATUSES).select_for_update().order_by("pk"))
                if not rows:
                    continue
                ranked = active.linker.link_mentions([m.text for m in rows], document_text=document.text, k=k)
                pks = concept_pks(active.dictionary_version, {c.concept_id for cands in ranked for c in cands})
                updated += sum(store_suggestions(m, cands, active.label, pks) for m, cands in zip(rows, ranked, strict=True))
    return updated


def suggest_for_collection(collection_id: int, k: int = SUGGESTIONS_K) -> int:
    collection = Collection.objects.select_related("dictionary").get(pk=collection_id)
    if collection.dictionary is None:
        raise CurationError(f"collection {collection.slug} has no dictionary to link to")
    return suggest_links(Mention.objects.filter(document__collection=collection), collection.dictionary.slug, k)
