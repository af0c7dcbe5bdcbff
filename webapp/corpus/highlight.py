"""Cut a document's text into segments for highlighting its mentions.

Mentions may nest ("breast cancer" inside "familial breast cancer") or overlap partly. HTML cannot nest
partly overlapping elements, so the text is cut at every mention boundary into flat segments, each knowing
every mention that covers it. The template renders a segment as one element; escaping is left to the
template engine (segments carry plain text, never markup).

Ordering is deterministic: mentions covering a segment are listed outermost first, by (start, -end, input
order), so the last one, the innermost (latest start, then shortest), is the segment's ``primary`` mention:
the one whose colour it takes and which a click selects.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

__all__ = ["Span", "Segment", "segment_text"]


@dataclass(frozen=True)
class Span(Generic[T]):
    """A character range ``[start, end)`` of the text and the item it stands for (a Mention, usually)."""

    start: int
    end: int
    item: T


@dataclass(frozen=True)
class Segment(Generic[T]):
    """A maximal run of text covered by the same set of spans (possibly none)."""

    start: int
    end: int
    text: str
    covering: tuple[T, ...] = ()  # outermost first
    starting: tuple[T, ...] = ()  # spans whose first character is in this segment
    ending: tuple[T, ...] = ()  # spans whose last character is in this segment

    @property
    def primary(self) -> T | None:
        """The innermost covering item, or None for plain text."""
        return self.covering[-1] if self.covering else None

    @property
    def is_highlighted(self) -> bool:
        return bool(self.covering)

    @property
    def overlaps(self) -> bool:
        """More than one span covers this text."""
        return len(self.covering) > 1


def _check(span: Span[T], length: int) -> None:
    if not 0 <= span.start < span.end <= length:
        raise ValueError(f"span [{span.start}, {span.end}) is empty or outside a text of {length} characters")


def segment_text(text: str, spans: Iterable[Span[T]], cuts: Iterable[int] = ()) -> list[Segment[T]]:
    """Segments covering ``text`` from its first to its last character, in order.

    Adjacent plain-text characters form one segment; a new segment starts wherever a span starts or ends,
    and at each of the extra ``cuts`` (e.g. the end of a title), which must lie inside the text.
    Raises ValueError for a span that is empty or lies outside the text.
    """
    ordered: Sequence[Span[T]] = [s for _, s in sorted(enumerate(spans), key=lambda p: (p[1].start, -p[1].end, p[0]))]
    for span in ordered:
        _check(span, len(text))
    extra = set(cuts)
    if any(not 0 <= c <= len(text) for c in extra):
        raise ValueError(f"cuts {sorted(extra)} must lie inside a text of {len(text)} characters")
    boundaries = sorted({0, len(text)} | extra | {s.start for s in ordered} | {s.end for s in ordered})
    segments: list[Segment[T]] = []
    active: list[Span[T]] = []  # spans covering the current segment, kept in ``ordered`` order
    upcoming = iter(ordered)
    pending = next(upcoming, None)
    for left, right in zip(boundaries, boundaries[1:], strict=False):
        active = [s for s in active if s.end > left]
        while pending is not None and pending.start == left:
            active.append(pending)
            pending = next(upcoming, None)
        segments.append(
            Segment(
                start=left,
                end=right,
                text=text[left:right],
                covering=tuple(s.item for s in active),
                starting=tuple(s.item for s in active if s.start == left),
                ending=tuple(s.item for s in active if s.end == right),
            )
        )
    return segments
