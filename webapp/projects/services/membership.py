"""Creating a project, changing its settings, adding and removing its members."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import IntegrityError, transaction
from django.urls import reverse

from webapp.audit import actions
from webapp.audit.events import record
from webapp.core.roles import is_curator
from webapp.corpus.models import Collection, Document
from webapp.projects.concept_filter import build_filter
from webapp.projects.models import Assignment, Member, Project
from webapp.projects.services import ProjectError
from webapp.vocab.models import KnownType


def _documents(collection: Collection, external_ids: Sequence[str]) -> list[Document]:
    wanted = list(dict.fromkeys(i.strip() for i in external_ids if i.strip()))
    found = {d.external_id: d for d in Document.objects.filter(collection=collection, external_id__in=wanted)}
    missing = [i for i in wanted if i not in found]
    if missing:
        shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
        raise ProjectError(f"{collection} has no document {shown}")
    return [found[i] for i in wanted]


def _check_filter(collection: Collection, types: Sequence[KnownType], roots: Sequence[str], title: str) -> None:
    if not types and not roots:
        return
    if collection.dictionary is None:
        raise ProjectError(f"{collection} has no dictionary, so a concept filter cannot apply")
    try:
        build_filter(collection.dictionary, [t.pk for t in types], list(roots), title)
    except ValueError as exc:
        raise ProjectError(str(exc)) from exc


@transaction.atomic
def create_project(
    *,
    by: Any,
    slug: str,
    title: str,
    collection: Collection,
    description: str = "",
    annotators_per_document: int = 2,
    document_ids: Sequence[str] = (),
    concept_types: Sequence[KnownType] = (),
    concept_roots: Sequence[str] = (),
) -> Project:
    """A project over the collection (or the listed documents of it); its creator becomes its manager."""
    if collection.is_workspace:
        raise ProjectError(f"{collection} holds an annotator's copies; choose the collection they were copied from")
    if Project.objects.filter(slug=slug).exists():
        raise ProjectError(f"a project named {slug!r} exists already")
    if annotators_per_document < 1:
        raise ProjectError("a document needs at least one annotator")
    roots = [r.strip() for r in concept_roots if r.strip()]
    _check_filter(collection, concept_types, roots, title)
    documents = _documents(collection, document_ids)
    project = Project.objects.create(
        slug=slug, title=title, description=description, collection=collection,
        annotators_per_document=annotators_per_document, concept_roots=roots, created_by=by,
    )
    project.documents.set(documents)
    project.concept_types.set(concept_types)
    Member.objects.create(project=project, user=by, role=Member.Role.MANAGER, added_by=by)
    record(actions.PROJECT_CREATED, actor=by, obj=project, after=_settings_account(project), link=_page(project))
    return project


@transaction.atomic
def update_settings(
    project: Project, *, title: str, description: str, annotators_per_document: int,
    concept_types: Sequence[KnownType], concept_roots: Sequence[str], by: Any = None,
) -> Project:
    """Change a project's settings and concept filter; ``by``: who (the audit log's actor)."""
    before = _settings_account(project)
    roots = [r.strip() for r in concept_roots if r.strip()]
    if annotators_per_document < 1:
        raise ProjectError("a document needs at least one annotator")
    _check_filter(project.collection, concept_types, roots, title)
    project.title, project.description = title, description
    project.annotators_per_document = annotators_per_document
    project.concept_roots = roots
    project.save(update_fields=["title", "description", "annotators_per_document", "concept_roots"])
    project.concept_types.set(concept_types)
    after = _settings_account(project)
    if after != before:
        record(actions.SETTINGS_CHANGED, actor=by, obj=project, before=before, after=after, link=_page(project))
    return project


def _settings_account(project: Project) -> dict[str, Any]:
    """A project's settings (its concept filter too) as the audit log keeps them."""
    return {"title": project.title, "description": project.description[:200],
            "annotators_per_document": project.annotators_per_document, "concept_roots": list(project.concept_roots),
            "concept_types": sorted(project.concept_types.values_list("code", flat=True))}


def _page(project: Project) -> str:
    return reverse("projects:detail", args=[project.slug])


def _roles(project: Project, user: Any) -> list[str]:
    return sorted(Member.objects.filter(project=project, user=user).values_list("role", flat=True))


def _record_roles(project: Project, user: Any, by: Any, before: list[str], obj: Member) -> None:
    """member.added (no role before), member.removed (none left) or member.role_changed (roles before and after)."""
    after = _roles(project, user)
    action = (actions.MEMBER_ADDED if not before else actions.MEMBER_REMOVED if not after
              else actions.MEMBER_ROLE_CHANGED)
    record(action, actor=by, obj=obj, label=f"{user.get_username()} in {project.slug}",
           before={"roles": before} if before else None, after={"roles": after} if after else None, link=_page(project))


def add_member(project: Project, user: Any, role: str, by: Any) -> Member:
    if role not in Member.Role.values:
        raise ProjectError(f"unknown role {role!r}; a member is an annotator, an adjudicator or a manager")
    if not user.is_active:
        raise ProjectError(f"{user.username}'s account is disabled")
    if not is_curator(user):
        raise ProjectError(f"{user.username} has no curator role in the workbench; an admin gives it first (Admin → Users)")
    label = Member.Role(role).label.lower()
    try:
        with transaction.atomic():
            before = _roles(project, user)
            member = Member.objects.create(project=project, user=user, role=role, added_by=by)
            _record_roles(project, user, by, before, member)
            return member
    except IntegrityError:
        raise ProjectError(f"{user.username} is {'an' if label[0] in 'aeiou' else 'a'} {label} of {project} already") from None


@transaction.atomic
def remove_member(member: Member, by: Any = None) -> None:
    """Remove a role; an annotator with documents not done keeps it until those are finished or unassigned.
    ``by``: who removes it (the audit log's actor)."""
    if member.role == Member.Role.ANNOTATOR:
        open_work = list(
            Assignment.objects.filter(project=member.project, annotator=member.user, state=Assignment.State.ASSIGNED)
            .values_list("document__external_id", flat=True)
        )
        if open_work:
            shown = ", ".join(open_work[:5]) + (f" and {len(open_work) - 5} more" if len(open_work) > 5 else "")
            raise ProjectError(
                f"{member.user.username} has {len(open_work)} document{'s' if len(open_work) != 1 else ''} not done in "
                f"{member.project} ({shown}): they finish them, or a manager unassigns them, before the annotator "
                "leaves. Nothing was changed."
            )
    before = _roles(member.project, member.user)
    pk = member.pk
    member.delete()
    member.pk = pk  # the audit event names the row removed
    _record_roles(member.project, member.user, by, before, member)
