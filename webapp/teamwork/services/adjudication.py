"""The annotators' decisions on one project document, span by span, and resolving them onto the document.

A *unit* is one span (start, end) that at least one annotator kept as a mention, or that the project document
itself holds. Each annotator's *label* for a unit: the concept id(s) of their link ("C1+C2" for a composite mention),
``NIL``, ``REJECT`` (they rejected the span, or their copy has no mention there: they moved or never added it), or
``None`` while it is still open. A unit on which every annotator gave the same label is *agreed*; others need the
adjudicator. Resolving writes the label to the project document with the ordinary decision service
(``via=adjudication``, by the person who resolved it) and records an :class:`Adjudication` with every label.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from webapp.corpus.formats.services import effective_links
from webapp.corpus.models import Document, Link, Mention
from webapp.curation.models import Decision
from webapp.curation.services import CurationError, add_mention, decide
from webapp.projects.models import Adjudication, Assignment, Project
from webapp.projects.services import ProjectError
from webapp.vocab.models import Concept

NIL = "NIL"
REJECT = "REJECT"
Span = tuple[int, int]


@dataclass(frozen=True)
class Choice:
    """One annotator's decision on a unit: the label and, for links, the concepts (one per part)."""

    label: str | None
    concept_pks: tuple[int, ...] = ()
    names: tuple[str, ...] = ()

    @property
    def is_open(self) -> bool:
        return self.label is None


@dataclass
class Unit:
    start: int
    end: int
    text: str
    mention_type: str = ""
    choices: dict[str, Choice] = field(default_factory=dict)  # by annotator username
    adjudication: Adjudication | None = None

    @property
    def key(self) -> str:
        return f"{self.start}-{self.end}"

    @property
    def labels(self) -> dict[str, str | None]:
        return {user: choice.label for user, choice in self.choices.items()}

    @property
    def agreed(self) -> bool:
        labels = set(self.labels.values())
        return len(labels) == 1 and None not in labels

    @property
    def common(self) -> Choice | None:
        """The choice every annotator made, when they agree."""
        return next(iter(self.choices.values())) if self.agreed else None

    @property
    def resolved(self) -> bool:
        return self.adjudication is not None


def _label(mention: Mention) -> Choice:
    if mention.status == Mention.Status.REJECTED:
        return Choice(REJECT)
    if mention.status in (Mention.Status.PENDING, Mention.Status.SUGGESTED):
        return Choice(None)
    curated = [link for link in mention.links.all() if link.origin == Link.Origin.CURATOR]
    parts = effective_links(curated, suggestions=False)  # the latest curator link of each part
    if not parts or all(link.nil for link in parts):
        return Choice(NIL)
    return Choice(
        "+".join(NIL if link.nil else (link.concept.concept_id if link.concept else link.concept_ref) for link in parts),
        tuple(link.concept_id for link in parts if link.concept_id),
        tuple(link.concept.preferred_name for link in parts if link.concept is not None),
    )


def _mentions(document: Document) -> list[Mention]:
    return list(document.mentions.prefetch_related("links__concept").order_by("start", "end", "pk"))


def document_units(project: Project, document: Document) -> tuple[list[Assignment], list[Unit]]:
    """The document's assignments and its units (in text order), each with every annotator's choice."""
    assignments = list(Assignment.objects.filter(project=project, document=document).select_related("annotator", "copy").order_by("annotator__username"))
    units: dict[Span, Unit] = {}
    for mention in _mentions(document):
        units.setdefault((mention.start, mention.end), Unit(mention.start, mention.end, mention.text, mention.mention_type))
    per_annotator: dict[str, dict[Span, Choice]] = {}
    for a in assignments:
        mine: dict[Span, Choice] = {}
        for mention in _mentions(a.copy):
            span = (mention.start, mention.end)
            units.setdefault(span, Unit(mention.start, mention.end, mention.text, mention.mention_type))
            choice = _label(mention)
            # Two mentions on one span (different types): a link outranks a rejection of the other.
            if span not in mine or mine[span].label in (REJECT, None):
                mine[span] = choice
        per_annotator[a.annotator.username] = mine
    for unit in units.values():
        for username, mine in per_annotator.items():
            unit.choices[username] = mine.get((unit.start, unit.end), Choice(REJECT))
    for adj in Adjudication.objects.filter(project=project, document=document).select_related("chosen_annotator", "adjudicator"):
        if (adj.start, adj.end) in units:
            units[(adj.start, adj.end)].adjudication = adj
    # Spans nobody keeps and that were never adjudicated need no decision when the project document has no such
    # mention either; they stay listed when the document has one (it must be rejected there).
    return assignments, [units[span] for span in sorted(units)]


def ready_for_adjudication(assignments: list[Assignment]) -> bool:
    return bool(assignments) and all(a.state == Assignment.State.DONE for a in assignments)


def _concepts(pks: tuple[int, ...]) -> list[Concept]:
    found = {c.pk: c for c in Concept.objects.filter(pk__in=pks)}
    return [found[pk] for pk in pks]


def _fresh(mention_pk: int) -> Mention:
    return Mention.objects.get(pk=mention_pk)


def _write(document: Document, unit: Unit, label: str, concept_pks: tuple[int, ...], user: Any) -> tuple[Mention | None, Decision | None]:
    """The label as the project document's decision on the unit's span (the mention is added if missing)."""
    Via, Action = Decision.Via, Decision.Action
    mention = Mention.objects.filter(document=document, start=unit.start, end=unit.end).order_by("pk").first()
    if label == REJECT:
        if mention is None or mention.status == Mention.Status.REJECTED:
            return mention, None
        outcome = decide(user=user, mention_id=mention.pk, action=Action.REJECT, seen_updated_at=mention.updated_at, via=Via.ADJUDICATION)
        return mention, outcome.decision
    if mention is None:
        added = add_mention(user=user, document_id=document.pk, start=unit.start, end=unit.end, mention_type=unit.mention_type)
        assert added.mention_id is not None
        mention = _fresh(added.mention_id)
    if label == NIL:
        outcome = decide(user=user, mention_id=mention.pk, action=Action.NIL, seen_updated_at=mention.updated_at, part=None, via=Via.ADJUDICATION)
        return mention, outcome.decision
    concepts = _concepts(concept_pks)
    if not concepts:
        raise ProjectError(f"no concept to link “{unit.text}” to")
    first: Decision | None = None
    for part, concept in enumerate(concepts):
        mention = _fresh(mention.pk)
        outcome = decide(user=user, mention_id=mention.pk, action=Action.RELINK, concept=concept, part=part,
                         seen_updated_at=mention.updated_at, via=Via.ADJUDICATION)
        first = first or outcome.decision
    return mention, first


def _record(project: Project, document: Document, unit: Unit, label: str, state: str, chosen: Any, user: Any,
            mention: Mention | None, decision: Decision | None) -> Adjudication:
    adjudication, _ = Adjudication.objects.update_or_create(
        project=project, document=document, start=unit.start, end=unit.end,
        defaults={"mention": mention, "state": state, "label": label, "chosen_annotator": chosen, "adjudicator": user,
                  "annotator_labels": unit.labels, "decision": decision},
    )
    return adjudication


def _unit(project: Project, document: Document, start: int, end: int) -> tuple[list[Assignment], Unit]:
    assignments, units = document_units(project, document)
    if not ready_for_adjudication(assignments):
        waiting = ", ".join(a.annotator.username for a in assignments if a.state != Assignment.State.DONE) or "annotators"
        raise ProjectError(f"{document} is not ready for adjudication: waiting for {waiting}")
    for unit in units:
        if (unit.start, unit.end) == (start, end):
            return assignments, unit
    raise ProjectError(f"{document} has no mention at {start}–{end}")


@transaction.atomic
def resolve(project: Project, document: Document, *, start: int, end: int, user: Any,
            annotator: str | None = None, concept: Concept | None = None, label: str | None = None) -> Adjudication:
    """Resolve one unit: take ``annotator``'s choice, or link ``concept``, or apply ``label`` (NIL or REJECT)."""
    _, unit = _unit(project, document, start, end)
    chosen_user = None
    if annotator is not None:
        choice = unit.choices.get(annotator)
        if choice is None:
            raise ProjectError(f"{annotator} did not annotate {document}")
        if choice.label is None:
            raise ProjectError(f"{annotator} left “{unit.text}” open")
        final, pks = choice.label, choice.concept_pks
        chosen_user = next(a.annotator for a in Assignment.objects.filter(project=project, document=document, annotator__username=annotator).select_related("annotator"))
    elif concept is not None:
        dictionary_id = project.collection.dictionary_id
        if concept.version.dictionary_id != dictionary_id:
            raise ProjectError(f"{concept.concept_id} is not a concept of the project's dictionary")
        final, pks = concept.concept_id, (concept.pk,)
    elif label in (NIL, REJECT):
        final, pks = label, ()
    else:
        raise ProjectError("take an annotator's decision, choose a concept, or say NIL or not a mention")
    try:
        mention, decision = _write(document, unit, final, pks, user)
    except CurationError as exc:
        raise ProjectError(str(exc)) from exc
    state = Adjudication.State.AGREED if unit.agreed and final == next(iter(unit.labels.values())) else Adjudication.State.ADJUDICATED
    return _record(project, document, unit, final, state, chosen_user, user, mention, decision)


@transaction.atomic
def apply_agreed(project: Project, document: Document, user: Any) -> int:
    """Write every agreed, not yet resolved unit to the project document; the number written."""
    assignments, units = document_units(project, document)
    if not ready_for_adjudication(assignments):
        return 0
    written = 0
    for unit in units:
        if not unit.agreed or unit.resolved:
            continue
        first = next(iter(unit.choices.values()))
        assert first.label is not None
        try:
            mention, decision = _write(document, unit, first.label, first.concept_pks, user)
        except CurationError as exc:
            raise ProjectError(f"“{unit.text}”: {exc}") from exc
        _record(project, document, unit, first.label, Adjudication.State.AGREED, None, user, mention, decision)
        written += 1
    return written


def open_disagreements(project: Project, document: Document) -> int:
    _, units = document_units(project, document)
    return sum(1 for u in units if not u.agreed and not u.resolved)
