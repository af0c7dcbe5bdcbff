"""An export's batch of documents, their mentions and their links, read as plain rows (issue #45).

Three queries a batch, each a ``values_list`` of the columns an export writes: no model instance per mention or link
and no prefetch machinery (which cloned a queryset per mention: 200 documents/s at 8 mentions a document, where rows
give thousands). The rows answer the attributes that :func:`webapp.corpus.formats.services.chosen_links`, the id
speller (:mod:`webapp.corpus.formats.ids`) and the provenance (:mod:`webapp.curation.provenance`) read of a
document, a mention or a link, under the same names.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import BooleanField, Q, QuerySet
from django.db.models.expressions import RawSQL

from webapp.corpus.models import Document, Link, Mention


@dataclass(slots=True)
class DocumentRow:
    pk: int
    collection_id: int
    external_id: str
    text: str
    title: str
    metadata: Any


@dataclass(slots=True)
class MentionRow:
    pk: int
    document_id: int
    start: int
    end: int
    text: str
    mention_type: str
    part_texts: list[str]
    status: str


@dataclass(slots=True)
class ConceptRow:
    concept_id: str


@dataclass(slots=True)
class UserRow:
    username: str

    def get_username(self) -> str:
        return self.username


@dataclass(slots=True)
class LinkRow:
    pk: int
    mention_id: int
    part: int
    concept_id: int | None
    concept: ConceptRow | None
    concept_ref: str
    nil: bool
    origin: str
    score: float | None
    rank: int | None
    model_version: str
    created_by: UserRow | None
    created_at: datetime


_DOCUMENT = ("pk", "collection_id", "external_id", "text", "title", "metadata")
_MENTION = ("pk", "document_id", "start", "end", "text", "mention_type", "part_texts", "status")
_LINK = ("pk", "mention_id", "part", "concept_id", "concept__concept_id", "concept_ref", "nil", "origin", "score", "rank",
         "model_version", "created_by__username", "created_at")


@dataclass(frozen=True)
class Batch:
    documents: list[DocumentRow]
    mentions: dict[int, list[MentionRow]]  # document pk -> its mentions by offset
    links: dict[int, list[LinkRow]]  # mention pk -> its links (part, created_at, id)


def read_batch(documents: QuerySet[Document], mentions_q: Q, after: int | None, size: int) -> Batch:
    """The next ``size`` documents of ``documents`` by pk after ``after`` (keyset, not OFFSET), with the mentions
    ``mentions_q`` keeps and their links."""
    query = documents if after is None else documents.filter(pk__gt=after)
    docs = [DocumentRow(*row) for row in query.order_by("pk").values_list(*_DOCUMENT)[:size]]
    mentions: dict[int, list[MentionRow]] = defaultdict(list)
    links: dict[int, list[LinkRow]] = defaultdict(list)
    if not docs:
        return Batch(docs, mentions, links)
    rows = (Mention.objects.filter(mentions_q, _any("corpus_mention.document_id", [d.pk for d in docs]))
            .order_by("document_id", "start", "end", "id").values_list(*_MENTION))
    for row in rows:
        mention = MentionRow(*row)
        mentions[mention.document_id].append(mention)
    mention_pks = [m.pk for ms in mentions.values() for m in ms]
    if mention_pks:
        link_rows = (Link.objects.filter(_any("corpus_link.mention_id", mention_pks)).order_by("mention_id", "part", "created_at", "id")
                     .values_list(*_LINK))
        for pk, mention_id, part, concept_pk, concept_id, ref, nil, origin, score, rank, version, user, at in link_rows:
            links[mention_id].append(LinkRow(
                pk, mention_id, part, concept_pk, ConceptRow(concept_id) if concept_pk is not None else None, ref, nil,
                origin, score, rank, version, UserRow(user) if user is not None else None, at,
            ))
    return Batch(docs, mentions, links)


def _any(column: str, values: list[int]) -> RawSQL:
    """``column = ANY(array)``: one parameter, where ``__in`` sends one a value (1,600 mention ids a batch, which
    psycopg's query parsing took longer over than PostgreSQL over the query)."""
    return RawSQL(f"{column} = ANY(%s)", (values,), output_field=BooleanField())
