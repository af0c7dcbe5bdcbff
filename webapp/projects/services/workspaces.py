"""An annotator's workspace collection in a project, and their copy of a project document.

The copy keeps the text (so offsets are the project document's), every mention span and the model's suggestions,
but none of the decisions, curator links or gold links: each annotator starts from the same pre-annotation and
decides independently.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils.text import slugify

from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.projects.models import Project, Workspace


def workspace_for(project: Project, annotator: Any) -> Workspace:
    """The annotator's workspace in the project, created on first use."""
    existing = Workspace.objects.select_related("collection").filter(project=project, annotator=annotator).first()
    if existing is not None:
        return existing
    base = f"{project.slug}--{slugify(annotator.username) or annotator.pk}"[:60]
    slug, n = base, 1
    while Collection.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base[:56]}-{n}"
    collection = Collection.objects.create(
        slug=slug,
        title=f"{project.title} · {annotator.username}",
        description=f"{annotator.username}'s copies of the documents assigned to them in project “{project.title}”.",
        dictionary_id=project.collection.dictionary_id,
        detection=Collection.Detection.OFF,  # copies arrive with the project document's mentions
        is_workspace=True,
    )
    return Workspace.objects.create(project=project, annotator=annotator, collection=collection)


@transaction.atomic
def copy_document(document: Document, workspace: Workspace) -> Document:
    """The annotator's copy: same text, spans and model suggestions; open mentions, no decisions."""
    copy = Document.objects.create(
        collection=workspace.collection,
        external_id=document.external_id,
        title=document.title,
        text=document.text,
        metadata={**document.metadata, "project": workspace.project.slug, "project_document": document.pk},
        detection_model=document.detection_model,
    )
    mentions = list(document.mentions.all().order_by("pk"))
    links = list(Link.objects.filter(mention__document=document, origin=Link.Origin.MODEL).order_by("pk"))
    suggested = {link.mention_id for link in links}
    copies = Mention.objects.bulk_create([
        Mention(
            document=copy, start=m.start, end=m.end, text=m.text, mention_type=m.mention_type,
            status=Mention.Status.SUGGESTED if m.pk in suggested else Mention.Status.PENDING,
            source=m.source, part_texts=list(m.part_texts), detector=m.detector, model_version=m.model_version,
        )
        for m in mentions
    ])
    by_source = {m.pk: c.pk for m, c in zip(mentions, copies, strict=True)}
    Link.objects.bulk_create([
        Link(
            mention_id=by_source[link.mention_id], part=link.part, concept_id=link.concept_id, concept_ref=link.concept_ref,
            nil=link.nil, origin=Link.Origin.MODEL, score=link.score, rank=link.rank, model_version=link.model_version,
            type_conflict=link.type_conflict, confidence=link.confidence,
        )
        for link in links
    ])
    return copy
