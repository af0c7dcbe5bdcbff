"""The one decision service: accept, relink, NIL or reject a mention, for the curation screen and the REST API.

Every decision runs in one transaction and locks the mention rows it changes (``select_for_update``). A decision
names the version of the mention the curator saw (its ``updated_at``); if someone changed the mention since,
:class:`Conflict` is raised and nothing is written, so two curators deciding the same mention at once never
overwrite each other silently.

One decision on one part: a curator Link records who, when, the chosen candidate's rank and the model version;
the mention's status changes; accepted or relinked text becomes a curator synonym (a vocab Name with source
"curator") of the chosen concept, so the next index build, the live index and the concept search know it; the
suggestions ranked above the chosen concept become hard negatives; the Decision row logs it all for undo. What
a decision teaches (the synonym, the negatives, its use as training evidence) is decided by one rule,
:func:`webapp.curation.teaching.lesson`: a link to a parent, or a decision made without teaching, teaches nothing.

Concurrency. Decisions on mentions of the same text (case-insensitive) are serialised by a transaction-level
advisory lock on that text, taken before any row lock: propagation locks every identical open mention and the
synonym insert takes the unique index entry of (concept, text), so two such decisions would otherwise lock the
same rows in opposite orders (measured: 207 of 476 targeted concurrent decisions died in a deadlock). Mention
rows are then locked in one statement in primary-key order, the order every other locker of several mentions
(background suggestions) uses. A deadlock that still happens (a lock order outside this module) is retried
once with a fresh transaction; the curator never sees a 500 for it.

Propagation writes in bulk (:func:`_apply_to_twins`): a fixed number of statements for all identical mentions,
not ten per mention. A collection-scope decision on a common text of a large collection (thousands of
identical open mentions) otherwise held their locks for tens of seconds (bench/load.py --with-import).
"""

from __future__ import annotations

import functools
import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ParamSpec, TypeVar

from django.db import OperationalError, connection, transaction
from django.db.models import Max, Q
from django.utils import timezone

from webapp.corpus.models import Link, Mention
from webapp.curation.models import DECIDED_STATUSES, OPEN_STATUSES, Decision, HardNegative
from webapp.curation.services.audit_events import decision_made
from webapp.curation.services.decision_rows import (
    STATUS,
    add_synonym,
    as_recorded,
    check_concept_filter,
    check_dictionary,
    curator_link,
    decision_row,
    default_concept,
    hard_negatives,
    part_count,
    part_text,
    part_total,
    suggestions_of,
)
from webapp.curation.services.errors import CurationError
from webapp.curation.signals import announce_decision
from webapp.curation.teaching import Lesson, lesson
from webapp.linking.registry import add_curator_synonym, add_curator_synonyms
from webapp.projects.access import decidable_documents_q
from webapp.vocab.models import Concept, Name

Action = Decision.Action
Via = Decision.Via

# The actions a curator takes on a mention's link; adding a mention and fixing a span are in spans.py.
LINK_ACTIONS = (Action.ACCEPT, Action.RELINK, Action.NIL, Action.REJECT)


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


# pg_advisory_xact_lock(key1, key2): key1 is this module's namespace, key2 the hash of the mention text.
_TEXT_LOCK_NAMESPACE = 0x6C696E6B  # "link"
_DEADLOCK = "40P01"
P = ParamSpec("P")
R = TypeVar("R")


def _is_deadlock(exc: OperationalError) -> bool:
    return getattr(getattr(exc, "__cause__", None), "sqlstate", None) == _DEADLOCK


def retry_deadlock_once(func: Callable[P, R]) -> Callable[P, R]:
    """Run ``func`` (its own transaction) again once if PostgreSQL aborted it to break a deadlock."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        if connection.in_atomic_block:
            return func(*args, **kwargs)  # a caller's transaction cannot be retried from inside it
        try:
            return func(*args, **kwargs)
        except OperationalError as exc:
            if not _is_deadlock(exc):
                raise
        return func(*args, **kwargs)

    return wrapper


@retry_deadlock_once
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
    teach: bool = True,
    store_shown: Callable[[Mention], object] | None = None,
) -> Outcome:
    """Record a decision on one mention, and optionally on every identical open mention of the scope.

    ``action`` is accept (``concept`` or the top suggestion, else the gold concept), relink (needs ``concept``),
    nil or reject. ``part=None`` accepts (each part's top suggestion) or NILs every part of a composite mention
    at once. ``teach=False``: the decision adds no name and is no training evidence (webapp.curation.teaching),
    nor are its propagated copies. ``store_shown`` is called with the locked mention once its version is checked,
    before the decision reads its suggestions: the curation screen stores there the ranking its panel showed (a GET
    stores nothing; :func:`webapp.curation.services.suggestions.store_ranking`), so the rank recorded is the rank
    seen, in the decision's own transaction. Raises :class:`Conflict` when the mention changed since
    ``seen_updated_at`` and :class:`CurationError` when the decision does not fit the mention.
    """
    if action not in LINK_ACTIONS:
        raise CurationError(f"unknown decision {action!r}")
    if scope not in Scope.CHOICES:
        raise CurationError(f"unknown scope {scope!r}")
    _lock_text_of(mention_id)
    twins: list[Mention] = []
    skipped = 0
    if scope == Scope.MENTION:
        mention = lock_mention(mention_id)
    else:
        mention, twins, skipped = _lock_with_identical_mentions(mention_id, scope, user)
    if changed_since(mention, seen_updated_at):
        raise conflict(mention, seen_updated_at)
    if store_shown is not None:
        store_shown(mention)
    batch = uuid.uuid4()
    if part is None:
        if action not in (Action.ACCEPT, Action.NIL) or concept is not None:
            raise CurationError("only accepting the top suggestions or NIL apply to every part at once")
        parts = range(part_count(mention))
    else:
        parts = range(part, part + 1)
    decisions = [_apply(mention, as_recorded(mention, action, concept, p), concept, p, user, via, batch,
                        time_on_task_ms if p == parts[0] else None, teach) for p in parts]
    decision = decisions[0]
    propagated: list[Decision] = []
    if twins:
        # A copy teaches what the decision taught: a parent link's copies are parent links too.
        propagated = _apply_to_twins(twins, action, decision.concept, user, batch, teach=decision.teaches)
    decision_made(decision, user, propagated=len(propagated), parts=len(decisions), scope=scope)  # webapp.audit
    # The learning loop: once committed, the dictionary's decisions may have reached its retrain policy's threshold.
    # Training listens (webapp.curation.signals says why curation announces rather than calls).
    transaction.on_commit(functools.partial(announce_decision, mention.document.collection.dictionary_id))
    return Outcome(decision, propagated, skipped, decisions[1:])


def lock_mention(mention_id: int) -> Mention:
    """The mention, locked for the transaction, with its document, collection and dictionary."""
    try:
        return Mention.objects.select_for_update(of=("self",)).select_related("document__collection__dictionary").get(pk=mention_id)
    except Mention.DoesNotExist:
        raise Conflict(None, "This mention no longer exists (its addition was undone). Reload the document.") from None


def changed_since(mention: Mention, seen: datetime) -> bool:
    """Whether ``mention`` (locked) is no longer the version a curator saw (its ``updated_at`` then: ``seen``).

    Gaining suggestions is no curator's change: a pending mention becomes "suggested" when the background task
    links it, or when a POST stores the ranking its panel showed (a GET stores nothing), and a decision on it
    stands. So a mention now suggested whose suggestions were stored after ``seen``, and that no decision has
    touched since (none made, none undone; adding it is none: the curator saw it added), is still the version seen.
    """
    if mention.updated_at == seen:
        return False
    if mention.status != Mention.Status.SUGGESTED or not mention.created_at <= seen < mention.updated_at:
        return True
    gained = mention.links.filter(origin=Link.Origin.MODEL, created_at__gt=seen).exists()
    touched = Q(created_at__gt=seen) & ~Q(action=Action.ADD_MENTION) | Q(undone_at__gt=seen)
    return not gained or Decision.objects.filter(touched, mention=mention).exists()


def conflict(mention: Mention, seen: datetime) -> Conflict:
    """The Conflict to raise when ``mention`` is no longer the version ``seen``: who changed it, and when."""
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


def _apply(
    mention: Mention,
    action: str,
    concept: Concept | None,
    part: int,
    user: Any,
    via: str,
    batch: uuid.UUID,
    time_on_task_ms: int | None,
    teach: bool = True,
) -> Decision:
    """One decision on one part of a locked mention: its curator link, status, synonym, log row and negatives."""
    parts = part_count(mention)
    if not 0 <= part < parts:
        raise CurationError(f"this mention has no part {part + 1}")
    if action in (Action.NIL, Action.REJECT) and concept is not None:
        raise CurationError(f"{action} takes no concept")
    previous_status = mention.status
    suggestions = suggestions_of(mention, part)
    if action == Action.ACCEPT and concept is None:
        concept = default_concept(mention, part, suggestions)
    if action == Action.RELINK and concept is None:
        raise CurationError("relink needs a concept")
    if concept is not None:
        check_dictionary(mention, concept)
        check_concept_filter(mention, concept)
    text = part_text(mention, part)
    taught = lesson(action=action, via=via, text=text, concept=concept, teach=teach,
                    workspace=mention.document.collection.is_workspace,
                    whole_text_of_parts=not mention.part_texts and parts > 1)
    link = None
    synonym = None
    if action != Action.REJECT:
        link = curator_link(mention, part, concept, suggestions, user)
        link.save(force_insert=True)
        synonym = add_synonym(taught, user)
    mention.status = STATUS[Action(action)]
    mention.save(update_fields=["status", "updated_at"])
    decision = decision_row(mention, text, action, via, part, concept, link, suggestions, user, batch, previous_status,
                         synonym, time_on_task_ms, taught.teaches)
    decision.save(force_insert=True)
    if taught.teaches:
        HardNegative.objects.bulk_create(hard_negatives(decision, suggestions, concept, action), ignore_conflicts=True)
    if synonym is not None and concept is not None:
        dictionary = mention.document.collection.dictionary
        if dictionary is not None:
            slug, cid, name = dictionary.slug, concept.concept_id, synonym.text
            # This process's live index learns the synonym once the decision is committed; other processes
            # pick it up from the database on their next lookup (webapp.linking.registry.get_active_linker).
            # A name the concept had already is in every index: adding it again would only count it twice.
            transaction.on_commit(lambda: add_curator_synonym(slug, name, cid))
    return decision


def _apply_to_twins(twins: Sequence[Mention], action: str, chosen: Concept | None, user: Any, batch: uuid.UUID,
                    teach: bool = True) -> list[Decision]:
    """The decision applied to part 0 of each locked identical mention (propagation): what :func:`_apply` does
    to each, in a fixed number of statements. A twin whose own top suggestion is ``chosen`` is accepted, any
    other relinked to it; NIL and reject stay what they are. ``teach``: whether the decision taught."""
    if chosen is None and action in (Action.ACCEPT, Action.RELINK):
        # Not reached from decide(), whose decision has a concept for these; one at a time says why it fails.
        return [_apply(twin, action, chosen, 0, user, Via.PROPAGATED, batch, None, teach) for twin in twins]
    pks = [twin.pk for twin in twins]
    suggestions: dict[int, list[Link]] = defaultdict(list)
    for link in (
        Link.objects.filter(mention_id__in=pks, origin=Link.Origin.MODEL, part=0).select_related("concept").order_by("mention_id", "rank", "id")
    ):
        suggestions[link.mention_id].append(link)
    highest = dict(Link.objects.filter(mention_id__in=pks).values_list("mention_id").annotate(top=Max("part")).order_by())
    checked: set[int | None] = set()
    plans: list[tuple[Mention, str, str, Lesson, Link | None]] = []  # twin, action, text, what it teaches, link
    for twin in twins:
        own = suggestions[twin.pk]
        twin_action = action
        if action in (Action.ACCEPT, Action.RELINK) and chosen is not None:
            top = next((s.concept_id for s in own if s.concept_id is not None), None)  # as top_concept_pk
            twin_action = Action.ACCEPT if top == chosen.pk else Action.RELINK
        if chosen is not None and twin.document.collection.dictionary_id not in checked:
            check_dictionary(twin, chosen)  # the same answer for every twin of one collection
            checked.add(twin.document.collection.dictionary_id)
        whole_text_of_parts = not twin.part_texts and part_total(twin, highest.get(twin.pk)) > 1
        link = curator_link(twin, 0, chosen, own, user) if twin_action != Action.REJECT else None
        text = part_text(twin, 0)
        taught = lesson(action=twin_action, via=Via.PROPAGATED, text=text, concept=chosen, teach=teach,
                        workspace=twin.document.collection.is_workspace, whole_text_of_parts=whole_text_of_parts)
        plans.append((twin, twin_action, text, taught, link))
    Link.objects.bulk_create([link for *_, link in plans if link is not None])
    synonyms: list[Name | None] = []
    named: set[str] = set()  # texts given to the concept already in this loop: get_or_create would find them
    for _twin, _action, _text, taught, link in plans:
        synonym = None
        if link is not None and taught.name and taught.name not in named:
            synonym = add_synonym(taught, user)
            named.add(taught.name)
        synonyms.append(synonym)
    now = timezone.now()
    previous = {twin.pk: twin.status for twin in twins}
    by_status: dict[str, list[int]] = defaultdict(list)
    for twin, twin_action, *_ in plans:
        by_status[STATUS[Action(twin_action)]].append(twin.pk)
        twin.status, twin.updated_at = STATUS[Action(twin_action)], now
    for status, group in by_status.items():
        Mention.objects.filter(pk__in=group).update(status=status, updated_at=now)
    decisions = [
        decision_row(twin, text, twin_action, Via.PROPAGATED, 0, chosen, link, suggestions[twin.pk], user, batch, previous[twin.pk],
                  synonym, None, taught.teaches)
        for (twin, twin_action, text, taught, link), synonym in zip(plans, synonyms, strict=True)
    ]
    Decision.objects.bulk_create(decisions)
    HardNegative.objects.bulk_create(
        [row for decision, (twin, twin_action, _text, taught, _link) in zip(decisions, plans, strict=True) if taught.teaches
         for row in hard_negatives(decision, suggestions[twin.pk], chosen, twin_action)],
        ignore_conflicts=True,
    )
    learnt: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for (twin, *_), synonym in zip(plans, synonyms, strict=True):
        dictionary = twin.document.collection.dictionary
        if synonym is not None and chosen is not None and dictionary is not None:
            learnt[dictionary.slug].append((synonym.text, chosen.concept_id))
    for slug, pairs in learnt.items():
        transaction.on_commit(functools.partial(add_curator_synonyms, slug, pairs))  # as _apply, one index lookup
    return decisions


def _lock_text_of(mention_id: int) -> None:
    """Wait for any other decision on a mention of the same text to commit (see the module's docstring)."""
    text = Mention.objects.filter(pk=mention_id).values_list("text", flat=True).first()
    if text is None:
        return  # lock_mention says it is gone
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, hashtext(lower(%s)))", [_TEXT_LOCK_NAMESPACE, text])


def _lock_with_identical_mentions(mention_id: int, scope: str, user: Any) -> tuple[Mention, list[Mention], int]:
    """The mention and the open mentions of the same text (case-insensitive) in the scope, locked together in
    primary-key order; and how many identical mentions were left alone because they are decided already. The scope
    ends where the user's right to decide does: a project's documents are not changed by a decision outside it."""
    try:
        first = Mention.objects.select_related("document").defer("document__text", "document__metadata").get(pk=mention_id)
    except Mention.DoesNotExist:
        raise Conflict(None, "This mention no longer exists (its addition was undone). Reload the document.") from None
    same = Mention.objects.filter(text__iexact=first.text)
    if scope == Scope.DOCUMENT:
        same = same.filter(document_id=first.document_id)
    else:
        same = same.filter(document__collection_id=first.document.collection_id).filter(
            decidable_documents_q(user, "document__"))
    decided = same.exclude(pk=mention_id).filter(status__in=DECIDED_STATUSES).count()
    locked = list(
        same.filter(Q(pk=mention_id) | Q(status__in=OPEN_STATUSES))
        .select_for_update(of=("self",))
        .select_related("document__collection__dictionary")
        .defer("document__text", "document__metadata")  # one copy of the text per twin: 20,000 twins of a long document
        .order_by("pk")
    )
    mention = next((m for m in locked if m.pk == mention_id), None)
    if mention is None:  # its text changed (a span fix) while this decision waited
        mention = lock_mention(mention_id)
    return mention, [m for m in locked if m.pk != mention_id], decided
