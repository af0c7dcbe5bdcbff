"""Who decided each exported link, and where each span of a project's document stands in adjudication.

An export can be a whole collection, so everything here is read for a batch of documents at once: one query for
the curator decisions behind the batch's curator links, one for its adjudications, one or two for the projects its
documents belong to; never one query per link or per mention.

A curator link's decision is the (not undone) :class:`~webapp.curation.models.Decision` whose ``created_links``
names it: that gives how it was decided (``via``: candidate list, search, propagation, adjudication, ...) and when.
A span's adjudication is the :class:`~webapp.projects.models.Adjudication` row of its mention, else of its span
(start, end) in the document; a mention of a project's document without one is ``open``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Exists, OuterRef

from webapp.corpus.formats.records import ADJUDICATION_OPEN, AdjudicationRecord
from webapp.corpus.models import Document, Link, Mention
from webapp.curation.models import Decision
from webapp.projects.models import Adjudication, Project


@dataclass(frozen=True)
class DecisionOf:
    """The decision that created a curator link."""

    username: str
    via: str
    at: datetime


@dataclass(frozen=True)
class Provenance:
    """What the export needs to know, for one batch of documents, beyond their mentions and links."""

    decisions: dict[int, DecisionOf]  # curator link pk -> its decision
    by_mention: dict[int, AdjudicationRecord]
    by_span: dict[tuple[int, int, int], AdjudicationRecord]  # (document pk, start, end)
    in_projects: set[int]  # pks of the batch's documents that a project curates

    def decided_by(self, link: Link) -> tuple[str, datetime, str]:
        """(who, when, how) of a link: a curator's username and decision, "gold", or a suggestion's model version."""
        if link.origin == Link.Origin.CURATOR:
            decision = self.decisions.get(link.pk)
            # The link's own user first (as the curation screen shows it); the decision's where the account was removed.
            who = link.created_by.get_username() if link.created_by else (decision.username if decision else "")
            return who or "curator", decision.at if decision else link.created_at, decision.via if decision else ""
        if link.origin == Link.Origin.MODEL:
            return link.model_version or "model", link.created_at, ""
        return "gold", link.created_at, ""

    def adjudication(self, mention: Mention) -> AdjudicationRecord | None:
        """The span's adjudication; ``open`` on a project's document without one; None outside projects."""
        found = self.by_mention.get(mention.pk) or self.by_span.get((mention.document_id, mention.start, mention.end))
        if found is None and mention.document_id in self.in_projects:
            return AdjudicationRecord(ADJUDICATION_OPEN)
        return found


def provenance(documents: Sequence[Document], links: Sequence[Link]) -> Provenance:
    """The provenance of ``links`` (the batch's exported links) and the adjudications of ``documents``."""
    doc_pks = [d.pk for d in documents]
    curator = [link.pk for link in links if link.origin == Link.Origin.CURATOR]
    return Provenance(_decisions(doc_pks, curator), *_adjudications(doc_pks), _in_projects(documents))


def _decisions(doc_pks: list[int], link_pks: list[int]) -> dict[int, DecisionOf]:
    if not link_pks:
        return {}
    wanted = set(link_pks)
    out: dict[int, DecisionOf] = {}
    # By document first: the decision index (document, user, -created_at) narrows the array overlap to the batch.
    rows = (
        Decision.objects.filter(document_id__in=doc_pks, created_links__overlap=link_pks, undone_at__isnull=True)
        .order_by("created_at", "id")
        .values_list("created_links", "user__username", "via", "created_at")
    )
    for created, username, via, at in rows:
        for pk in created:
            if pk in wanted:
                out[pk] = DecisionOf(username, via, at)
    return out


def _adjudications(doc_pks: list[int]) -> tuple[dict[int, AdjudicationRecord], dict[tuple[int, int, int], AdjudicationRecord]]:
    by_mention: dict[int, AdjudicationRecord] = {}
    by_span: dict[tuple[int, int, int], AdjudicationRecord] = {}
    rows = (
        Adjudication.objects.filter(document_id__in=doc_pks)
        .order_by("created_at", "id")  # two projects on one collection: the latest adjudication of a span wins
        .values_list("document_id", "start", "end", "mention_id", "state", "adjudicator__username",
                     "chosen_annotator__username", "annotator_labels")
    )
    for document_id, start, end, mention_id, state, adjudicator, chosen, labels in rows:
        record = AdjudicationRecord(
            state=state,
            adjudicator=adjudicator or "",
            chosen_annotator=chosen or "",
            annotator_labels={str(k): str(v) for k, v in sorted((labels or {}).items())},
        )
        by_span[(document_id, start, end)] = record
        if mention_id is not None:
            by_mention[mention_id] = record
    return by_mention, by_span


def _in_projects(documents: Sequence[Document]) -> set[int]:
    """The documents a project curates: those of its collection, or of its list of documents where it has one."""
    collections = {d.collection_id for d in documents}
    listed = Project.documents.through.objects.filter(project_id=OuterRef("pk"))
    projects = list(
        Project.objects.filter(collection_id__in=collections)
        .annotate(subset=Exists(listed))
        .values_list("pk", "collection_id", "subset")
    )
    whole = {collection for _, collection, subset in projects if not subset}
    subsets = [pk for pk, _, subset in projects if subset]
    chosen: set[int] = set()
    if subsets:
        chosen = set(
            Project.documents.through.objects.filter(project_id__in=subsets, document_id__in=[d.pk for d in documents])
            .values_list("document_id", flat=True)
        )
    return {d.pk for d in documents if d.collection_id in whole or d.pk in chosen}
