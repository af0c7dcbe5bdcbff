"""Comparing index versions of a dictionary on its gold collections, mention by mention.

The matrix (:func:`comparison_matrix`) sets every index a training run made beside the active one: per gold
collection its latest succeeded :class:`Evaluation` (Acc@1, Acc@5, MRR, per mention type), the differences from the
active index's evaluation on the same collection and McNemar's test on the mentions both evaluated
(:func:`linker.evaluate.mcnemar_p`). Figures of two evaluations that did not count the same mentions (the gold
changed between them) are still shown, but the test is on the shared mentions only and says how many.
:func:`changed_mentions` lists the mentions whose top-1 changed, from the :class:`MentionOutcome` rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q

from linker.evaluate import mcnemar_p
from webapp.corpus.models import Collection, Mention
from webapp.linking.models import IndexVersion
from webapp.projects.access import visible_collections
from webapp.training.held_out import find_overlap, trained_collections
from webapp.training.models import Evaluation, MentionOutcome, TrainingRun
from webapp.vocab.models import Concept, Dictionary

__all__ = ["Cell", "Changes", "ChangedMention", "Matrix", "Row", "build_cell", "changed_mentions", "comparison_matrix",
           "compared_indexes", "latest_evaluation"]

FIGURES = (("acc@1", "Acc@1"), ("acc@5", "Acc@5"), ("mrr", "MRR"))
SIGNIFICANT = 0.05  # a McNemar p-value below this is marked as a significant difference


@dataclass(frozen=True)
class Figure:
    label: str
    value: float | None
    delta: float | None  # value minus the active index's on the same collection; None: no figure to compare

    @property
    def direction(self) -> str:
        """"up", "down" or "" (no change, or nothing to compare with): the colour of the delta."""
        if self.delta is None or abs(self.delta) < 5e-4:  # shown with 3 decimals: below that it reads as 0.000
            return ""
        return "up" if self.delta > 0 else "down"

    @property
    def delta_text(self) -> str:
        return f"{self.delta:+.3f}" if self.delta is not None else ""


@dataclass(frozen=True)
class McNemar:
    """McNemar's test of a candidate against the active index on the mentions both evaluations counted."""

    shared: int  # mentions in both evaluations
    fixed: int  # right now, wrong under the active index (c)
    broken: int  # wrong now, right under the active index (b)
    p: float

    @property
    def significant(self) -> bool:
        return self.p < SIGNIFICANT

    @property
    def p_text(self) -> str:
        """With its relation, so that the page writes "p < 0.001" and "p = 0.042" (never "p = < 0.001")."""
        return "< 0.001" if self.p < 0.001 else f"= {self.p:.3f}"


@dataclass(frozen=True)
class TypeRow:
    mention_type: str
    mentions: int
    acc1: Figure
    acc5: Figure


@dataclass
class Cell:
    """One index on one gold collection: its latest figures, or why there are none, and what is under way."""

    index: IndexVersion
    collection: Collection
    reference: IndexVersion | None  # the active index the figures are compared with (None: this is it, or none)
    evaluation: Evaluation | None = None  # the latest succeeded evaluation
    pending: Evaluation | None = None  # one queued or running
    failed: Evaluation | None = None  # the latest, when it failed after the last success
    refused: str = ""  # why this index may not be evaluated on this collection
    figures: list[Figure] = field(default_factory=list)
    types: list[TypeRow] = field(default_factory=list)
    mcnemar: McNemar | None = None
    reference_evaluation: Evaluation | None = None

    @property
    def is_reference(self) -> bool:
        return self.reference is None or self.reference.pk == self.index.pk

    @property
    def mentions(self) -> int:
        return int(self.evaluation.metrics.get("mentions", 0)) if self.evaluation else 0

    @property
    def dom_id(self) -> str:
        return f"cell-{self.index.pk}-{self.collection.pk}"


@dataclass
class Row:
    index: IndexVersion
    run: TrainingRun | None
    active: bool
    cells: list[Cell] = field(default_factory=list)

    @property
    def method(self) -> str:
        """The short name of the method that made it ("BioSyn"), or how it was built."""
        if self.run is not None:
            return self.run.get_method_display().split(" (")[0]
        return self.index.encoder.name if self.index.encoder_id else "tf-idf only"


@dataclass
class Matrix:
    dictionary: Dictionary
    active: IndexVersion | None
    collections: list[Collection]
    rows: list[Row]


def compared_indexes(dictionary: Dictionary) -> list[IndexVersion]:
    """The active index first, then the ready and retired indexes that training runs made, newest first."""
    indexes = IndexVersion.objects.filter(dictionary=dictionary).select_related("encoder", "dictionary", "dictionary_version")
    active = indexes.filter(state=IndexVersion.State.ACTIVE).first()
    others = (indexes.filter(state__in=[IndexVersion.State.READY, IndexVersion.State.RETIRED], training_runs__isnull=False)
              .distinct().order_by("-created_at", "-id"))
    return ([active] if active else []) + [i for i in others if active is None or i.pk != active.pk]


def gold_collections(dictionary: Dictionary, user: Any) -> list[Collection]:
    """The dictionary's gold collections the user may see (a project's collection is its members':
    :func:`webapp.projects.access.visible_collections`)."""
    return list(visible_collections(user).filter(dictionary=dictionary, has_gold=True).order_by("slug"))


def comparison_matrix(dictionary: Dictionary, user: Any) -> Matrix:
    indexes = compared_indexes(dictionary)
    active = indexes[0] if indexes and indexes[0].state == IndexVersion.State.ACTIVE else None
    collections = gold_collections(dictionary, user)
    runs = {r.index_version_id: r for r in TrainingRun.objects.filter(index_version__in=indexes).order_by("created_at")}
    rows = []
    for index in indexes:
        trained = trained_collections(index.encoder)
        rows.append(Row(index, runs.get(index.pk), index.state == IndexVersion.State.ACTIVE,
                        [build_cell(index, c, active, trained) for c in collections]))
    return Matrix(dictionary, active, collections, rows)


def latest_evaluation(index: IndexVersion, collection: Collection) -> Evaluation | None:
    """The latest succeeded evaluation of ``index`` on ``collection``."""
    return (Evaluation.objects.filter(index_version=index, collection=collection, state=Evaluation.State.SUCCEEDED)
            .order_by("-finished_at", "-id").first())


def build_cell(index: IndexVersion, collection: Collection, reference: IndexVersion | None,
               trained: list[Collection] | None = None) -> Cell:
    cell = Cell(index, collection, reference)
    cell.evaluation = latest_evaluation(index, collection)
    newer = Evaluation.objects.filter(index_version=index, collection=collection)
    if cell.evaluation is not None:
        newer = newer.filter(Q(created_at__gt=cell.evaluation.created_at) | Q(state__in=["queued", "running"]))
    cell.pending = newer.filter(state__in=[Evaluation.State.QUEUED, Evaluation.State.RUNNING]).order_by("-id").first()
    cell.failed = newer.filter(state=Evaluation.State.FAILED).order_by("-id").first() if cell.pending is None else None
    if cell.evaluation is None:
        overlap = find_overlap(collection, trained if trained is not None else trained_collections(index.encoder),
                               f"index {index.pk}")
        cell.refused = overlap.reason if overlap.refused else ""
        return cell
    base = latest_evaluation(reference, collection) if reference is not None and not cell.is_reference else None
    cell.reference_evaluation = base
    mine, theirs = cell.evaluation.metrics, base.metrics if base is not None else {}
    cell.figures = [_figure(label, mine.get(key), theirs.get(key) if base is not None else None)
                    for key, label in FIGURES]
    their_types = theirs.get("by_type", {}) if base is not None else {}
    for mention_type, figures in sorted((mine.get("by_type") or {}).items()):
        other = their_types.get(mention_type) if base is not None else None
        cell.types.append(TypeRow(
            mention_type or "(no type)", int(figures.get("mentions", 0)),
            _figure("Acc@1", figures.get("acc@1"), other.get("acc@1") if other else None),
            _figure("Acc@5", figures.get("acc@5"), other.get("acc@5") if other else None),
        ))
    if base is not None:
        cell.mcnemar = mcnemar(cell.evaluation, base)
    return cell


def _figure(label: str, value: float | None, reference: float | None) -> Figure:
    delta = value - reference if value is not None and reference is not None else None
    return Figure(label, value, delta)


def _correct(evaluation: Evaluation) -> dict[int, bool]:
    return {m: rank == 1 for m, rank in MentionOutcome.objects.filter(evaluation=evaluation).values_list("mention_id", "rank")}


def mcnemar(candidate: Evaluation, reference: Evaluation) -> McNemar | None:
    """McNemar's test on the mentions both evaluations have outcomes for; None when they share none (evaluations
    made before outcomes were kept)."""
    mine, theirs = _correct(candidate), _correct(reference)
    shared = mine.keys() & theirs.keys()
    if not shared:
        return None
    fixed = sum(1 for m in shared if mine[m] and not theirs[m])
    broken = sum(1 for m in shared if theirs[m] and not mine[m])
    return McNemar(len(shared), fixed, broken, mcnemar_p(broken, fixed))


# --- the mentions whose top-1 changed --------------------------------------------------------------------------


@dataclass(frozen=True)
class Concepts:
    """Concept ids as written in outcomes ("A+B|C") with their names."""

    ids: str
    names: list[tuple[str, str]]  # (id, preferred name or "")


@dataclass(frozen=True)
class ChangedMention:
    mention: Mention
    gold: Concepts
    old: Concepts  # the reference index's top-1
    new: Concepts  # the candidate's top-1
    old_rank: int | None
    new_rank: int | None


@dataclass
class Changes:
    candidate: Evaluation
    reference: Evaluation
    fixed: list[ChangedMention] = field(default_factory=list)  # right now, wrong before
    broken: list[ChangedMention] = field(default_factory=list)  # wrong now, right before
    still_wrong: list[ChangedMention] = field(default_factory=list)  # wrong before and now, another top-1
    shared: int = 0
    hidden: int = 0  # changed mentions in documents a project keeps from the reader, not listed

    @property
    def groups(self) -> list[tuple[str, str, str, list[ChangedMention]]]:
        """(id, title, explanation, mentions) in the order shown."""
        return [
            ("fixed", "Fixed", "right now, wrong under the active index", self.fixed),
            ("broken", "Broken", "wrong now, right under the active index", self.broken),
            ("still-wrong", "Still wrong, changed", "wrong under both, with another first candidate", self.still_wrong),
        ]


def changed_mentions(candidate: Evaluation, reference: Evaluation, visible: Q | None = None) -> Changes:
    """The mentions both evaluations counted whose top-1 differs, grouped fixed / broken / still wrong, in document
    order; with ``visible`` (a filter on mentions), only those it keeps are listed and the others counted."""
    if candidate.collection_id != reference.collection_id:
        raise ValueError(f"evaluation {candidate.pk} is on collection {candidate.collection_id} but evaluation "
                         f"{reference.pk} on {reference.collection_id}: only evaluations on one collection compare")
    theirs = {o.mention_id: o for o in MentionOutcome.objects.filter(evaluation=reference)}
    mine = {o.mention_id: o for o in MentionOutcome.objects.filter(evaluation=candidate)}
    changes = Changes(candidate, reference, shared=len(mine.keys() & theirs.keys()))
    changed = [(mine[m], theirs[m]) for m in mine.keys() & theirs.keys() if mine[m].predicted != theirs[m].predicted]
    listed = Mention.objects.filter(visible) if visible is not None else Mention.objects.all()
    mentions = listed.select_related("document", "document__collection").in_bulk([new.mention_id for new, _ in changed])
    changes.hidden = len(changed) - len(mentions)  # outcomes cascade with their mentions: the rest are hidden
    changed = [pair for pair in changed if pair[0].mention_id in mentions]
    names = _concept_names(candidate.index_version.dictionary_id,
                           {cid for new, old in changed for o in (new, old) for cid in _ids(o.gold) + _ids(o.predicted)})
    rows = sorted(changed, key=lambda pair: (mentions[pair[0].mention_id].document_id, mentions[pair[0].mention_id].start))
    for new, old in rows:
        item = ChangedMention(mentions[new.mention_id], _concepts(new.gold, names), _concepts(old.predicted, names),
                              _concepts(new.predicted, names), old.rank, new.rank)
        if new.correct and not old.correct:
            changes.fixed.append(item)
        elif old.correct and not new.correct:
            changes.broken.append(item)
        elif not new.correct and not old.correct:
            changes.still_wrong.append(item)
        # Right under both with another top-1: a part with several acceptable ids; nothing changed for the curator.
    return changes


def _ids(joined: str) -> list[str]:
    return [cid for part in joined.split("|") for cid in part.split("+") if cid]


def _concepts(joined: str, names: dict[str, str]) -> Concepts:
    return Concepts(joined, [(cid, names.get(cid, "")) for cid in _ids(joined)])


def _concept_names(dictionary_id: int, ids: set[str]) -> dict[str, str]:
    """Preferred names of the dictionary's concepts, the newest release's name where releases differ."""
    rows = (Concept.objects.filter(version__dictionary_id=dictionary_id, concept_id__in=ids)
            .order_by("version__imported_at", "version_id").values_list("concept_id", "preferred_name"))
    return dict(rows)
