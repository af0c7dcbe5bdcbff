"""A project's agreement figures: the annotators' finished copies, compared span by span (linker.agreement).

Only documents every assigned annotator has marked done count: a copy in progress would read as disagreement.
Labels are those of :mod:`webapp.teamwork.services.adjudication` (a concept id, ``C1+C2`` for a composite, ``NIL``);
spans an annotator rejected or removed are not theirs, so they count against span agreement, not link agreement.
Beside the inter-annotator figures, each annotator's agreement with the adjudicated result: it moves as the
adjudicator resolves disagreements.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass, field

from linker.agreement import AgreementReport, ConceptHierarchy, agreement
from webapp.curation.panel import search_version
from webapp.projects.models import Project
from webapp.projects.selectors import document_progress
from webapp.teamwork.services.adjudication import NIL, REJECT, document_units
from webapp.vocab.models import Concept, HierarchyEdge

Unit = tuple[int, int, int]  # (project document pk, start, end)


@dataclass(frozen=True)
class WithAdjudicated:
    """One annotator against the adjudicated labels of the spans they annotated."""

    annotator: str
    items: int
    agreed: int

    @property
    def rate(self) -> float | None:
        return self.agreed / self.items if self.items else None


@dataclass
class ProjectAgreement:
    report: AgreementReport | None
    documents: int  # documents whose annotators are all done (the ones compared)
    waiting: int  # documents with annotators still at work
    open_disagreements: int
    resolved: int
    with_adjudicated: list[WithAdjudicated] = field(default_factory=list)
    disputes: list[tuple[str, str, str, str, int]] = field(default_factory=list)  # (label, its name) twice, count
    per_document: list[tuple[str, int, int]] = field(default_factory=list)  # (external id, units agreed, units)


def _hierarchy(project: Project) -> tuple[ConceptHierarchy | None, int | None]:
    version = search_version(project.collection)
    if version is None:
        return None, None
    edges = HierarchyEdge.objects.filter(version=version).values_list("child__concept_id", "parent__concept_id")
    parents: dict[str, list[str]] = {}
    for child, parent in edges.iterator(chunk_size=20000):
        parents.setdefault(child, []).append(parent)
    return (ConceptHierarchy(parents) if parents else None), version.pk


def project_agreement(project: Project) -> ProjectAgreement:
    labels: dict[Hashable, dict[Hashable, str]] = {}
    spans: dict[Hashable, set[Unit]] = {}
    documents = waiting = open_count = resolved = 0
    final: dict[Unit, str] = {}
    given: dict[str, dict[Unit, str]] = {}
    per_document: list[tuple[str, int, int]] = []
    for row in document_progress(project):
        if not row.assignments:
            continue
        if not row.all_done:
            waiting += 1
            continue
        documents += 1
        _, units = document_units(project, row.document)
        agreed_here = 0
        for unit in units:
            key = (row.document.pk, unit.start, unit.end)
            if unit.adjudication is not None:
                final[key] = unit.adjudication.label
                resolved += 1
            elif not unit.agreed:
                open_count += 1
            agreed_here += unit.agreed
            for annotator, choice in unit.choices.items():
                labels.setdefault(annotator, {})
                spans.setdefault(annotator, set())
                given.setdefault(annotator, {})
                if choice.label is None:
                    continue
                given[annotator][key] = choice.label
                if choice.label != REJECT:
                    spans[annotator].add(key)
                    labels[annotator][key] = choice.label
        per_document.append((row.document.external_id, agreed_here, len(units)))
    report = None
    if len(labels) >= 2:
        hierarchy, _ = _hierarchy(project)
        report = agreement(labels, spans, hierarchy)
    with_adjudicated = []
    for annotator, mine in sorted(given.items()):
        items = [key for key in mine if key in final]
        with_adjudicated.append(WithAdjudicated(annotator, len(items), sum(mine[k] == final[k] for k in items)))
    names: dict[str, str] = {}
    if report is not None and report.disputes:
        ids = Counter(part for d in report.disputes for label in (d.a, d.b) for part in label.split("+") if part != NIL)
        version = search_version(project.collection)
        if version is not None:
            names = dict(Concept.objects.filter(version=version, concept_id__in=list(ids)).values_list("concept_id", "preferred_name"))

    def named(label: str) -> str:
        return " + ".join(names.get(part, "NIL" if part == NIL else "") for part in label.split("+"))

    disputes = [(d.a, named(d.a), d.b, named(d.b), d.count) for d in (report.disputes if report else ())]
    return ProjectAgreement(report, documents, waiting, open_count, resolved, with_adjudicated, disputes, per_document)
