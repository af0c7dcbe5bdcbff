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
from datetime import datetime

from linker.agreement import AgreementReport, ConceptHierarchy, agreement
from webapp.corpus.models import Document
from webapp.curation.panel import search_version
from webapp.projects.models import Project
from webapp.projects.selectors import document_progress
from webapp.teamwork.services.adjudication import NIL, REJECT, Unit, document_units
from webapp.vocab.models import Concept, HierarchyEdge

SpanKey = tuple[int, int, int]  # (project document pk, start, end)


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


@dataclass(frozen=True)
class ComparedDocument:
    """A project document whose assigned annotators are all done: its units, and when the last one finished."""

    document: Document
    units: list[Unit]
    completed_at: datetime | None


def compared_documents(project: Project) -> tuple[list[ComparedDocument], int]:
    """The documents agreement is computed on (every assigned annotator done), and how many assigned documents still
    have annotators at work."""
    compared: list[ComparedDocument] = []
    waiting = 0
    for row in document_progress(project):
        if not row.assignments:
            continue
        if not row.all_done:
            waiting += 1
            continue
        _, units = document_units(project, row.document)
        done_at = [a.done_at for a in row.assignments if a.done_at is not None]
        compared.append(ComparedDocument(row.document, units, max(done_at, default=None)))
    return compared, waiting


@dataclass
class _Labels:
    """The annotators' labels over some compared documents, as :func:`linker.agreement.agreement` takes them."""

    labels: dict[Hashable, dict[Hashable, str]] = field(default_factory=dict)
    spans: dict[Hashable, set[SpanKey]] = field(default_factory=dict)
    given: dict[str, dict[SpanKey, str]] = field(default_factory=dict)
    final: dict[SpanKey, str] = field(default_factory=dict)
    open_count: int = 0
    resolved: int = 0
    per_document: list[tuple[str, int, int]] = field(default_factory=list)


def _labels(documents: list[ComparedDocument]) -> _Labels:
    out = _Labels()
    for compared in documents:
        agreed_here = 0
        for unit in compared.units:
            key = (compared.document.pk, unit.start, unit.end)
            if unit.adjudication is not None:
                out.final[key] = unit.adjudication.label
                out.resolved += 1
            elif not unit.agreed:
                out.open_count += 1
            agreed_here += unit.agreed
            for annotator, choice in unit.choices.items():
                out.labels.setdefault(annotator, {})
                out.spans.setdefault(annotator, set())
                out.given.setdefault(annotator, {})
                if choice.label is None:
                    continue
                out.given[annotator][key] = choice.label
                if choice.label != REJECT:
                    out.spans[annotator].add(key)
                    out.labels[annotator][key] = choice.label
        out.per_document.append((compared.document.external_id, agreed_here, len(compared.units)))
    return out


def team_report(documents: list[ComparedDocument], hierarchy: ConceptHierarchy | None) -> AgreementReport | None:
    """The inter-annotator figures over these documents (None under two annotators): what the agreement page
    shows for all of them, and the dashboard for the documents finished in one week."""
    found = _labels(documents)
    return agreement(found.labels, found.spans, hierarchy) if len(found.labels) >= 2 else None


def project_hierarchy(project: Project) -> ConceptHierarchy | None:
    return _hierarchy(project)[0]


def project_agreement(project: Project, compared: tuple[list[ComparedDocument], int] | None = None) -> ProjectAgreement:
    """``compared``: :func:`compared_documents` when the caller has it already (the dashboard)."""
    documents, waiting = compared if compared is not None else compared_documents(project)
    found = _labels(documents)
    labels, given, final = found.labels, found.given, found.final
    report = None
    if len(labels) >= 2:
        hierarchy, _ = _hierarchy(project)
        report = agreement(labels, found.spans, hierarchy)
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
    return ProjectAgreement(report, len(documents), waiting, found.open_count, found.resolved, with_adjudicated, disputes,
                            found.per_document)
