"""Curation services: decide, undo, propagate, add a mention, fix a span, and store model suggestions.

Every function that writes runs in one transaction and locks the mention rows it changes
(``select_for_update``). A decision names the version of the mention the curator saw (its ``updated_at``);
if someone changed the mention since, :class:`Conflict` is raised and nothing is written, so two curators
deciding the same mention at once never overwrite each other silently.

The accept / relink / NIL / reject step itself is :func:`webapp.corpus.decisions.record_decision` (shared with
the REST API); this module adds the decision log, hard negatives, the live index update, propagation to
identical mentions and undo around it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from linker.retrieval import Candidate
from webapp.core.roles import is_admin
from webapp.corpus.decisions import DecisionError, record_decision
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.curation.live import active_linker, add_synonym_now
from webapp.curation.models import Decision, HardNegative
from webapp.vocab.models import Concept, DictionaryVersion, Name

SUGGESTIONS_K = 10  # suggestions stored per mention part: the panel's list, and enough to know margins
HARD_NEGATIVES_PER_DECISION = 5
OPEN_STATUSES = (Mention.Status.PENDING, Mention.Status.SUGGESTED)
DECIDED_STATUSES = (Mention.Status.ACCEPTED, Mention.Status.RELINKED, Mention.Status.NIL, Mention.Status.REJECTED)

Action = Decision.Action
Via = Decision.Via


class CurationError(ValueError):
    """The request cannot be carried out as asked; the message says why, in words for the curator."""


class Conflict(Exception):
    """The mention changed since the curator loaded it. Nothing was written."""

    def __init__(self, mention: Mention | None, message: str, latest: Decision | None = None) -> None:
        self.mention = mention
        self.latest = latest
        super().__init__(message)


class Scope:
    MENTION = "mention"
    DOCUMENT = "document"
    COLLECTION = "collection"
    CHOICES = (MENTION, DOCUMENT, COLLECTION)


@dataclass(frozen=True)
class Outcome:
    decision: Decision  # the decision on the mention the curator chose (its first part)
    propagated: list[Decision]  # the same decision applied to identical mentions
    skipped: int  # identical mentions left alone because a curator had decided them already
    other_parts: list[Decision] = field(default_factory=list)  # accept / NIL of a composite mention's other parts

    @property
    def batch(self) -> uuid.UUID:
        return self.decision.batch


# --- deciding -------------------------------------------------------------------------------------------


@transaction.atomic
def decide(
    *,
    user: Any,
    mention_id: int,
    action: str,
    seen_updated_at: datetime,
    concept: Concept | None = None,
    part: int | None = 0,
    via: str = Via.CANDIDATE,
    time_on_task_ms: int | None = None,
    scope: str = Scope.MENTION,
) -> Outcome:
    """Record a decision on one mention, and optionally on every identical open mention of the scope.

    ``action`` is accept (``concept`` or the top suggestion), relink (needs ``concept``), nil or reject.
    ``part=None`` accepts (each part's top suggestion) or NILs every part of a composite mention at once.
    Raises :class:`Conflict` when the mention changed since ``seen_updated_at`` and :class:`CurationError`
    when the decision does not fit the mention.
    """
    if action not in (Action.ACCEPT, Action.RELINK, Action.NIL, Action.REJECT):
        raise CurationError(f"unknown decision {action!r}")
    if scope not in Scope.CHOICES:
        raise CurationError(f"unknown scope {scope!r}")
    mention = _lock_mention(mention_id)
    if mention.updated_at != seen_updated_at:
        raise _conflict(mention, seen_updated_at)
    batch = uuid.uuid4()
    if part is None:
        if action not in (Action.ACCEPT, Action.NIL) or concept is not None:
            raise CurationError("only accepting the top suggestions or NIL apply to every part at once")
        parts = range(_part_count(mention))
    else:
        parts = range(part, part + 1)
    decisions = [_apply(mention, action, concept, p, user, via, batch, time_on_task_ms if p == parts[0] else None) for p in parts]
    decision = decisions[0]
    propagated: list[Decision] = []
    skipped = 0
    if scope != Scope.MENTION:
        twins, skipped = _identical_mentions(mention, scope)
        chosen = decision.concept
        for twin in twins:
            twin_action = action
            if action in (Action.ACCEPT, Action.RELINK) and chosen is not None:
                twin_action = Action.ACCEPT if _top_concept_pk(twin, 0) == chosen.pk else Action.RELINK
            propagated.append(_apply(twin, twin_action, chosen, 0, user, Via.PROPAGATED, batch, None))
    return Outcome(decision, propagated, skipped, decisions[1:])


def _lock_mention(mention_id: int) -> Mention:
    try:
        return Mention.objects.select_for_update(of=("self",)).select_related("document__collection__dictionary").get(pk=mention_id)
    except Mention.DoesNotExist:
        raise Conflict(None, "This mention no longer exists (its addition was undone). Reload the document.") from None


def _conflict(mention: Mention, seen: datetime) -> Conflict:
    latest = (
        Decision.objects.filter(mention=mention).select_related("user", "undone_by", "concept").order_by("-created_at", "-id").first()
    )
    if latest is not None and latest.created_at > seen:
        who = latest.undone_by if latest.is_undone else latest.user
        what = "undid a decision on" if latest.is_undone else f"{latest.get_action_display().lower()} for"
        when = (latest.undone_at or latest.created_at)
        message = (
            f"{who.get_username()} {what} this mention at {timezone.localtime(when):%H:%M:%S} while you were looking at it. "
            "Your decision was not saved. The current state is shown below: decide again if it is still needed."
        )
    else:
        message = (
            f"This mention changed at {timezone.localtime(mention.updated_at):%H:%M:%S} (now {mention.get_status_display().lower()}) "
            "after you opened it. Your decision was not saved. The current state is shown below: decide again if it is still needed."
        )
    return Conflict(mention, message, latest)


def _part_count(mention: Mention) -> int:
    """Parts with a text of their own, or with model suggestions (the linker splits composites itself)."""
    suggested = mention.links.filter(origin=Link.Origin.MODEL).order_by("-part").values_list("part", flat=True).first()
    return max(1, len(mention.part_texts), (suggested or 0) + 1)


def _part_text(mention: Mention, part: int) -> str:
    return mention.part_texts[part] if part < len(mention.part_texts) else mention.text


def _suggestions(mention: Mention, part: int) -> list[Link]:
    return list(
        mention.links.filter(origin=Link.Origin.MODEL, part=part).select_related("concept").order_by("rank", "id")
    )


def _top_concept_pk(mention: Mention, part: int) -> int | None:
    return (
        mention.links.filter(origin=Link.Origin.MODEL, part=part, concept__isnull=False)
        .order_by("rank", "id")
        .values_list("concept_id", flat=True)
        .first()
    )


def _apply(
    mention: Mention,
    action: str,
    concept: Concept | None,
    part: int,
    user: Any,
    via: str,
    batch: uuid.UUID,
    time_on_task_ms: int | None,
) -> Decision:
    """One decision on a locked mention: the shared record_decision, then the log, negatives and live index."""
    if not 0 <= part < _part_count(mention):
        raise CurationError(f"this mention has no part {part + 1}")
    previous_status = mention.status
    suggestions = _suggestions(mention, part)
    try:
        result = record_decision(
            mention_id=mention.pk,
            action=action,
            user=user,
            seen_updated_at=mention.updated_at,
            concept=concept,
            part=part,
        )
    except DecisionError as exc:
        raise CurationError(str(exc)) from exc
    link = result.link
    chosen = link.concept if link is not None else None
    text = _part_text(mention, part)
    synonym = None
    # A composite the linker split itself has no text per part, so record_decision adds no synonym for it.
    whole_text_of_a_part = not mention.part_texts and _part_count(mention) > 1
    if chosen is not None and result.synonym_created:
        synonym = Name.objects.filter(concept=chosen, text=text.strip()).first()
    decision = Decision.objects.create(
        batch=batch,
        document_id=mention.document_id,
        mention=mention,
        mention_text=text,
        action=action,
        via=via,
        part=part,
        concept=chosen,
        concept_ref=chosen.concept_id if chosen is not None else "",
        rank=link.rank if link is not None else None,
        score=link.score if link is not None else None,
        model_version=(link.model_version if link is not None else (suggestions[0].model_version if suggestions else "")),
        time_on_task_ms=time_on_task_ms,
        user=user,
        previous_status=previous_status,
        created_links=[link.pk] if link is not None else [],
        synonym=synonym,
        result_updated_at=result.mention.updated_at,
    )
    _hard_negatives(decision, suggestions, chosen, action)
    if chosen is not None and not whole_text_of_a_part:
        slug = mention.document.collection.dictionary.slug if mention.document.collection.dictionary else None
        if slug:
            cid = chosen.concept_id
            # This process's live index learns the synonym once the decision is committed; other processes
            # pick it up from the database on their next lookup (webapp.curation.live.active_linker).
            transaction.on_commit(lambda: add_synonym_now(slug, text, cid))
    mention.status = result.mention.status
    mention.updated_at = result.mention.updated_at
    return decision


def _hard_negatives(decision: Decision, suggestions: Sequence[Link], chosen: Concept | None, action: str) -> None:
    """Suggestions the curator turned down: those ranked above the chosen concept, or the top ones for NIL."""
    if action == Action.REJECT:
        return  # the span is not a mention at all: a detector negative, not a linking one
    negatives: list[Link] = []
    for link in suggestions:
        if chosen is not None and link.concept_id == chosen.pk:
            break
        if link.concept_id is not None:
            negatives.append(link)
    HardNegative.objects.bulk_create(
        [
            HardNegative(decision=decision, mention_text=decision.mention_text, concept_id=link.concept_id, rank=link.rank, score=link.score)
            for link in negatives[:HARD_NEGATIVES_PER_DECISION]
        ],
        ignore_conflicts=True,
    )


def _identical_mentions(mention: Mention, scope: str) -> tuple[list[Mention], int]:
    """Open mentions with the same text (case-insensitive) in the scope, locked; and how many decided ones were left."""
    same = Mention.objects.filter(text__iexact=mention.text).exclude(pk=mention.pk)
    if scope == Scope.DOCUMENT:
        same = same.filter(document_id=mention.document_id)
    else:
        same = same.filter(document__collection_id=mention.document.collection_id)
    decided = same.filter(status__in=DECIDED_STATUSES).count()
    # A fixed lock order (by pk) keeps two propagations over the same mentions from deadlocking.
    twins = list(same.filter(status__in=OPEN_STATUSES).select_for_update(of=("self",)).select_related("document__collection__dictionary").order_by("pk"))
    return twins, decided


# --- undo -------------------------------------------------------------------------------------------------


@transaction.atomic
def undo(*, user: Any, decision_id: int) -> list[Decision]:
    """Undo a decision and every decision of its batch; refuses (Conflict) if a mention changed since."""
    first = Decision.objects.select_related("user").filter(pk=decision_id).first()
    if first is None:
        raise CurationError("no such decision")
    if first.user_id != user.pk and not is_admin(user):
        raise CurationError(f"only {first.user.get_username()} or an admin can undo this decision")
    decisions = list(Decision.objects.select_for_update().filter(batch=first.batch, undone_at__isnull=True).order_by("-created_at", "-id"))
    if not decisions:
        raise CurationError("this decision was undone already")
    now = timezone.now()
    for decision in decisions:
        decision.refresh_from_db(fields=["result_updated_at"])  # undoing a later part of the batch moved it on
        _undo_one(decision)
        decision.undone_at = now
        decision.undone_by = user
        decision.save(update_fields=["undone_at", "undone_by"])
    return decisions


def _undo_one(decision: Decision) -> None:
    if decision.mention_id is None:
        return  # the mention is gone already
    mention = Mention.objects.select_for_update().get(pk=decision.mention_id)
    if decision.result_updated_at is not None and mention.updated_at != decision.result_updated_at:
        latest = Decision.objects.filter(mention=mention, created_at__gt=decision.created_at).select_related("user").first()
        who = f" by {latest.user.get_username()}" if latest is not None else ""
        raise Conflict(
            mention,
            f"“{mention.text}” was changed{who} after this decision, so undoing it would overwrite that change. Undo the later change first.",
            latest,
        )
    if decision.action == Action.ADD_MENTION:
        mention.delete()
        return
    _restore(decision, mention)
    # The mention is back to what the decision before this one left, in a new version: that decision stays
    # undoable (its "version after" follows the mention).
    before = (
        Decision.objects.filter(mention=mention, undone_at__isnull=True, created_at__lte=decision.created_at)
        .exclude(pk=decision.pk).order_by("-created_at", "-id").first()
    )
    if before is not None:
        Decision.objects.filter(pk=before.pk).update(result_updated_at=mention.updated_at)


def _restore(decision: Decision, mention: Mention) -> None:
    if decision.action == Action.FIX_SPAN:
        mention.start, mention.end = decision.previous_start, decision.previous_end
        mention.text = mention.document.text[mention.start : mention.end]
        mention.links.filter(origin=Link.Origin.MODEL).delete()  # suggestions were for the other span
        mention.save(update_fields=["start", "end", "text", "updated_at"])
        return
    Link.objects.filter(pk__in=decision.created_links, mention=mention).delete()
    decision.hard_negatives.all().delete()
    if decision.synonym_id is not None:
        still_needed = (
            Decision.objects.filter(undone_at__isnull=True, concept_id=decision.concept_id, mention_text=decision.mention_text)
            .exclude(pk=decision.pk)
            .exists()
        )
        if not still_needed:
            Name.objects.filter(pk=decision.synonym_id, source=Name.Source.CURATOR).delete()
    mention.status = decision.previous_status or Mention.Status.PENDING
    mention.save(update_fields=["status", "updated_at"])


def last_undoable(user: Any, document: Document) -> Decision | None:
    """The user's latest decision in the document that is not undone yet (what the undo key undoes)."""
    return Decision.objects.filter(document=document, user=user, undone_at__isnull=True).order_by("-created_at", "-id").first()


# --- spans --------------------------------------------------------------------------------------------------


def _clean_span(text: str, start: int, end: int) -> tuple[int, int]:
    if not 0 <= start < end <= len(text):
        raise CurationError("select some text of the document first")
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start == end:
        raise CurationError("the selection holds only white space")
    return start, end


@transaction.atomic
def add_mention(*, user: Any, document_id: int, start: int, end: int, mention_type: str = "") -> Decision:
    document = Document.objects.get(pk=document_id)
    start, end = _clean_span(document.text, start, end)
    if Mention.objects.filter(document=document, start=start, end=end, mention_type=mention_type).exists():
        raise CurationError(f"“{document.text[start:end]}” is a mention already")
    try:
        with transaction.atomic():
            mention = Mention.objects.create(
                document=document, start=start, end=end, text=document.text[start:end], mention_type=mention_type,
                status=Mention.Status.PENDING, source=Mention.Source.CURATOR,
            )
    except IntegrityError as exc:
        raise CurationError(f"this span cannot be added: {exc}") from exc
    return Decision.objects.create(
        document=document, mention=mention, mention_text=mention.text, action=Action.ADD_MENTION, via=Via.TEXT,
        user=user, previous_status="", result_updated_at=mention.updated_at,
    )


@transaction.atomic
def fix_span(*, user: Any, mention_id: int, seen_updated_at: datetime, start: int, end: int, time_on_task_ms: int | None = None) -> Decision:
    mention = _lock_mention(mention_id)
    if mention.updated_at != seen_updated_at:
        raise _conflict(mention, seen_updated_at)
    start, end = _clean_span(mention.document.text, start, end)
    if (start, end) == (mention.start, mention.end):
        raise CurationError("the span is unchanged")
    if Mention.objects.filter(document_id=mention.document_id, start=start, end=end, mention_type=mention.mention_type).exclude(pk=mention.pk).exists():
        raise CurationError(f"another mention has the span “{mention.document.text[start:end]}” already")
    previous = (mention.start, mention.end, mention.status)
    mention.start, mention.end, mention.text = start, end, mention.document.text[start:end]
    mention.links.filter(origin=Link.Origin.MODEL).delete()  # suggestions were for the old text
    mention.save(update_fields=["start", "end", "text", "updated_at"])
    return Decision.objects.create(
        document_id=mention.document_id, mention=mention, mention_text=mention.text, action=Action.FIX_SPAN, via=Via.TEXT,
        user=user, previous_status=previous[2], previous_start=previous[0], previous_end=previous[1],
        time_on_task_ms=time_on_task_ms, result_updated_at=mention.updated_at,
    )


# --- model suggestions --------------------------------------------------------------------------------------


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
    active = active_linker(dictionary_slug)
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
