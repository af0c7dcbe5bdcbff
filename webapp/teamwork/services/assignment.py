"""Assigning a project's documents to its annotators, and an annotator finishing a document.

Three ways to assign: by hand (these documents to these annotators), round robin (each document nobody holds yet to
the next annotator in turn) and N per document (each document topped up to the project's number of annotators per
document, the least-loaded annotators first). Each assignment makes the annotator's copy of the document.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from webapp.corpus.models import Document
from webapp.curation.models import OPEN_STATUSES, Decision
from webapp.projects.models import Assignment, Member, Project
from webapp.projects.selectors import project_documents
from webapp.projects.services import ProjectError
from webapp.projects.services.workspaces import copy_document, workspace_for
from webapp.teamwork.services.adjudication import apply_agreed


class Mode:
    MANUAL = "manual"
    ROUND_ROBIN = "round_robin"
    PER_DOCUMENT = "per_document"
    CHOICES = ((MANUAL, "These documents to these annotators"),
               (ROUND_ROBIN, "Round robin: each unassigned document to the next annotator"),
               (PER_DOCUMENT, "N annotators per document: top every document up, least-loaded annotators first"))


def _check_annotators(project: Project, annotators: Sequence[Any]) -> None:
    if not annotators:
        raise ProjectError("choose at least one annotator")
    members = set(Member.objects.filter(project=project, role=Member.Role.ANNOTATOR).values_list("user_id", flat=True))
    outsiders = [a.username for a in annotators if a.pk not in members]
    if outsiders:
        raise ProjectError(f"{', '.join(outsiders)} {'is' if len(outsiders) == 1 else 'are'} not an annotator of {project}; add them as members first")


def _create(project: Project, pairs: Sequence[tuple[Document, Any]], by: Any) -> list[Assignment]:
    out = []
    for document, annotator in pairs:
        workspace = workspace_for(project, annotator)
        copy = copy_document(document, workspace)
        out.append(Assignment.objects.create(project=project, document=document, annotator=annotator, copy=copy, assigned_by=by))
    return out


@transaction.atomic
def assign(project: Project, *, mode: str, annotators: Sequence[Any], by: Any, documents: Sequence[Document] = ()) -> list[Assignment]:
    """Create the assignments (and copies) the mode asks for; all or nothing."""
    _check_annotators(project, annotators)
    Project.objects.select_for_update().get(pk=project.pk)  # one assignment run at a time per project
    in_project = project_documents(project)
    held: dict[int, set[int]] = {}
    for doc_id, user_id in Assignment.objects.filter(project=project).values_list("document_id", "annotator_id"):
        held.setdefault(doc_id, set()).add(user_id)
    if mode == Mode.MANUAL:
        if not documents:
            raise ProjectError("choose at least one document")
        outside = [d.external_id for d in documents if not in_project.filter(pk=d.pk).exists()]
        if outside:
            raise ProjectError(f"{', '.join(outside[:5])} {'is' if len(outside) == 1 else 'are'} not a document of {project}")
        twice = [f"{d.external_id} to {a.username}" for d in documents for a in annotators if a.pk in held.get(d.pk, set())]
        if twice:
            raise ProjectError(f"already assigned: {'; '.join(twice[:8])}{' …' if len(twice) > 8 else ''}. Nothing was assigned")
        return _create(project, [(d, a) for d in documents for a in annotators], by)
    load = Counter({a.pk: 0 for a in annotators})
    load.update(Assignment.objects.filter(project=project, annotator__in=annotators, state=Assignment.State.ASSIGNED)
                .values_list("annotator_id", flat=True))
    by_pk = {a.pk: a for a in annotators}
    pairs: list[tuple[Document, Any]] = []
    if mode == Mode.ROUND_ROBIN:
        order = [a.pk for a in annotators]
        turn = 0
        for document in in_project.exclude(pk__in=list(held)).order_by("pk"):
            pairs.append((document, by_pk[order[turn % len(order)]]))
            turn += 1
    elif mode == Mode.PER_DOCUMENT:
        want = project.annotators_per_document
        if want > len(annotators):
            raise ProjectError(f"{project} wants {want} annotators per document; choose at least {want} annotators")
        for document in in_project.order_by("pk"):
            holders = held.get(document.pk, set())
            missing = want - len(holders)
            for pk in sorted((pk for pk in by_pk if pk not in holders), key=lambda pk: (load[pk], pk))[:max(missing, 0)]:
                pairs.append((document, by_pk[pk]))
                load[pk] += 1
    else:
        raise ProjectError(f"unknown way of assigning {mode!r}")
    if not pairs:
        raise ProjectError("every document already has its annotators; nothing to assign")
    return _create(project, pairs, by)


@transaction.atomic
def unassign(assignment: Assignment) -> None:
    """Remove an assignment whose copy holds no decision yet (a copy with work is never thrown away)."""
    work = Decision.objects.filter(document=assignment.copy, undone_at__isnull=True).count()
    if work:
        raise ProjectError(
            f"{assignment.annotator.username} has made {work} decision{'s' if work != 1 else ''} on {assignment.document}: "
            "the assignment stays (their work would be lost). Nothing was changed."
        )
    copy = assignment.copy
    assignment.delete()
    copy.delete()


def open_mentions(assignment: Assignment) -> int:
    return assignment.copy.mentions.filter(status__in=OPEN_STATUSES).count()


@transaction.atomic
def mark_done(assignment: Assignment, user: Any) -> Assignment:
    """The annotator has decided every mention of their copy. With one annotator per document, their decisions
    become the project document's curated links at once (there is nothing to adjudicate)."""
    assignment = Assignment.objects.select_for_update().select_related("project", "document", "annotator").get(pk=assignment.pk)
    if assignment.annotator_id != user.pk:
        raise ProjectError(f"only {assignment.annotator.username} can mark their copy of {assignment.document} done")
    if assignment.state == Assignment.State.DONE:
        return assignment
    remaining = open_mentions(assignment)
    if remaining:
        raise ProjectError(f"{remaining} mention{'s are' if remaining != 1 else ' is'} still open in your copy of "
                           f"{assignment.document}: decide {'them' if remaining != 1 else 'it'} (or reject the span) first")
    assignment.state = Assignment.State.DONE
    assignment.done_at = timezone.now()
    assignment.save(update_fields=["state", "done_at"])
    siblings = Assignment.objects.filter(project=assignment.project, document=assignment.document)
    if assignment.project.annotators_per_document == 1 and not siblings.filter(~Q(state=Assignment.State.DONE)).exists():
        apply_agreed(assignment.project, assignment.document, user)
    return assignment
