"""Read-side queries of the corpus pages: collection statistics and the parts of a document view."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from django.db.models import Count, Prefetch, Q, QuerySet

from webapp.corpus.highlight import Segment, Span, segment_text
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.corpus.windows import TextWindow
from webapp.vocab.models import Concept

# A mention "has a decision" once it has left the pending state. Suggested counts too: the model has made
# a suggestion, which the curation views then confirm or replace. Listed positively (not "!= pending") so
# that the filter stays a plain condition inside COUNT(...) FILTER over a join.
# A curator has decided it; a model suggestion alone is not a decision (the curation dashboard agrees).
DECIDED_STATUSES = [s for s in Mention.Status.values if s not in (Mention.Status.PENDING, Mention.Status.SUGGESTED)]

EVERY_DOCUMENT = Q()  # the default document filter: keeps every document (an admin's view)


@dataclass(frozen=True)
class Progress:
    mentions: int
    decided: int

    @property
    def share(self) -> float:
        return self.decided / self.mentions if self.mentions else 0.0

    @property
    def percent(self) -> int:
        """Rounded down, so 100 means every mention is decided."""
        return int(self.share * 100)


@dataclass(frozen=True)
class CollectionSummary:
    collection: Collection
    documents: int
    progress: Progress


@dataclass(frozen=True)
class GoldRef:
    """One gold link of a mention (one per part of a composite mention)."""

    part: int
    label: str  # the resolved concept id, else the id as the source wrote it, else "NIL"
    concept: Concept | None  # with version__dictionary selected, for concept_url
    nil: bool


@dataclass(frozen=True, eq=False)  # compared by identity: templates test "row in segment.starting"
class MentionRow:
    number: int  # 1-based position in the document
    mention: Mention
    gold: tuple[GoldRef, ...]

    @property
    def gold_label(self) -> str:
        return " + ".join(g.label for g in self.gold) or "no gold link"


@dataclass(frozen=True)
class TextBlock:
    kind: str  # "title" or "body"
    segments: list[Segment[MentionRow]]


def collection_summaries(collections: QuerySet[Collection] | None = None, visible: Q = EVERY_DOCUMENT) -> list[CollectionSummary]:
    """Counts over the documents ``visible`` keeps (:func:`webapp.projects.access.visible_documents_q`)."""
    counted = Q(documents__in=Document.objects.filter(visible)) if visible else Q()
    decided = Q(documents__mentions__status__in=DECIDED_STATUSES) & counted
    rows = (collections if collections is not None else Collection.objects.filter(is_workspace=False)).order_by("slug").annotate(
        n_documents=Count("documents", distinct=True, filter=counted or None),
        n_mentions=Count("documents__mentions", filter=counted or None),
        n_decided=Count("documents__mentions", filter=decided),
    )
    return [CollectionSummary(c, c.n_documents, Progress(c.n_mentions, c.n_decided)) for c in rows]


def documents_with_counts(collection: Collection, visible: Q = EVERY_DOCUMENT) -> QuerySet[Document]:
    return (
        Document.objects.filter(collection=collection).filter(visible)
        .order_by("id")
        .only("id", "external_id", "title", "collection_id")
        .annotate(n_mentions=Count("mentions"), n_decided=Count("mentions", filter=Q(mentions__status__in=DECIDED_STATUSES)))
    )


def mention_rows(document: Document, window: TextWindow | None = None) -> list[MentionRow]:
    """The mentions starting in ``window`` (all of them without one), numbered in the whole document."""
    gold_links = Link.objects.filter(origin=Link.Origin.GOLD).select_related("concept__version__dictionary").order_by("part")
    mentions = document.mentions.order_by("start", "end", "id").prefetch_related(
        Prefetch("links", queryset=gold_links, to_attr="gold_links")
    )
    first = 1
    if window is not None and not window.is_whole:
        first += document.mentions.filter(start__lt=window.start).count()
        mentions = mentions.filter(start__gte=window.start, start__lt=window.end)
    return [
        MentionRow(number, m, tuple(_gold_ref(link) for link in m.gold_links))  # type: ignore[attr-defined]
        for number, m in enumerate(mentions, start=first)
    ]


def _gold_ref(link: Link) -> GoldRef:
    if link.nil:
        return GoldRef(link.part, "NIL", None, True)
    label = link.concept.concept_id if link.concept else link.concept_ref
    return GoldRef(link.part, label, link.concept, False)


def status_counts(rows: list[MentionRow]) -> list[tuple[str, str, int]]:
    """(status, label, count) for every status, in the order the model declares them."""
    counts = Counter(r.mention.status for r in rows)
    return [(value, label, counts[value]) for value, label in Mention.Status.choices]


def document_status_counts(document: Document) -> list[tuple[str, str, int]]:
    """:func:`status_counts` of all of the document's mentions, counted by the database (a page shows a part)."""
    counts = dict(document.mentions.order_by().values_list("status").annotate(n=Count("id")).values_list("status", "n"))
    return [(value, label, counts.get(value, 0)) for value, label in Mention.Status.choices]


def text_blocks(document: Document, rows: list[MentionRow], window: TextWindow | None = None) -> list[TextBlock]:
    """The document's text (or the part ``window`` holds) as highlight segments, its title set apart when the text
    begins with it.

    PubTator documents store "title abstract" as one text (offsets count over both); showing the title as
    a heading reads better. Where a mention crosses the title's end the text stays one block. Segments of a part
    count their offsets in the whole text, as the curation screen's selections do.
    """
    if window is not None and not window.is_whole:
        return _window_blocks(document, rows, window)
    text, title = document.text, document.title
    spans = [Span(r.mention.start, r.mention.end, r) for r in rows]
    end = len(title)
    if not title or not text.startswith(title) or not text[end : end + 1].isspace() or any(s.start < end < s.end for s in spans):
        return [TextBlock("body", segment_text(text, spans))]
    body_start = end + len(text[end:]) - len(text[end:].lstrip())
    if any(s.start < body_start and s.end > end for s in spans):  # a mention on the separator: keep it
        body_start = end
    segments = segment_text(text, spans, cuts=[end, body_start])
    return [
        TextBlock("title", [s for s in segments if s.end <= end]),
        TextBlock("body", [s for s in segments if s.start >= body_start]),
    ]


def _window_blocks(document: Document, rows: list[MentionRow], window: TextWindow) -> list[TextBlock]:
    """A part of a long document: one block (the first part sets its title apart as a short document does)."""
    if window.start == 0 and all(r.mention.end <= window.end for r in rows):
        head = Document(pk=document.pk, title=document.title, text=document.text[: window.end])
        return text_blocks(head, rows)
    text = document.text[window.start : window.end]
    # A mention starts in its part; one of a chain of overlapping mentions that crosses the part's end is cut there.
    spans = [Span(r.mention.start - window.start, min(r.mention.end, window.end) - window.start, r) for r in rows]
    segments = segment_text(text, spans)
    return [TextBlock("body", [replace(seg, start=seg.start + window.start, end=seg.end + window.start) for seg in segments])]


def neighbours(document: Document, visible: Q = EVERY_DOCUMENT) -> tuple[Document | None, Document | None]:
    """The documents before and after it in its collection, among those ``visible`` keeps."""
    siblings = Document.objects.filter(collection_id=document.collection_id).filter(visible).only("id", "external_id", "title")
    previous = siblings.filter(id__lt=document.id).order_by("-id").first()
    following = siblings.filter(id__gt=document.id).order_by("id").first()
    return previous, following
