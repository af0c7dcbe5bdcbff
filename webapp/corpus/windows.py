"""A long document is shown in parts: windows of about DOCUMENT_WINDOW_CHARS characters, each with its mentions.

A page that drew a 9.5M-character document with its 20,000 mentions whole took 20 s and 22.9 MB of HTML; a part
costs what an abstract or a paper's section does, whatever the document's length. Windows are fixed (part 3 is
always the same characters), so a link, the curation page opened on a mention, and the text refreshed after a
decision on that mention all show the same part. A window ends at a line break (else a space) after its nominal
end, never inside a mention: a mention belongs to the window where it starts. A document no longer than one
window is one part, and its pages look as they always did.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Max

from webapp.corpus.models import Document, Mention

DOCUMENT_WINDOW_CHARS = 20_000
# How far past its nominal end a window looks for a line break, then for a space, to end on.
_LINE_REACH = 2_000
_SPACE_REACH = 200
# Overlapping mentions can chain across a boundary; after this many moves the window ends where it is (a mention
# crossing it is drawn up to the window's end).
_MAX_MOVES = 8


@dataclass(frozen=True)
class TextWindow:
    """Characters ``[start, end)`` of a document of ``length`` characters: part ``number`` of ``count``."""

    number: int  # from 1
    count: int
    start: int
    end: int
    length: int

    @property
    def is_whole(self) -> bool:
        return self.count <= 1

    @property
    def previous(self) -> int | None:
        return self.number - 1 if self.number > 1 else None

    @property
    def next(self) -> int | None:
        return self.number + 1 if self.number < self.count else None


def _nominal_count(length: int, size: int) -> int:
    return max(1, -(-length // size))


def _boundary(document: Document, k: int, size: int) -> int:
    """Where window ``k`` (from 0) starts: after ``k * size`` characters, at a line or word start, in no mention."""
    text = document.text
    if k <= 0:
        return 0
    at = k * size
    for _ in range(_MAX_MOVES):
        if at >= len(text):
            return len(text)
        line = text.find("\n", at, at + _LINE_REACH)
        space = line if line >= 0 else text.find(" ", at, at + _SPACE_REACH)
        at = space + 1 if space >= 0 else at
        crossing = Mention.objects.filter(document_id=document.pk, start__lt=at, end__gt=at).aggregate(
            end=Max("end")
        )["end"]
        if crossing is None:
            return at
        at = crossing
    return min(at, len(text))


def _count(document: Document, size: int) -> int:
    """Windows in the document: the nominal number, less a last one its predecessor's boundary moved past the end."""
    count = _nominal_count(len(document.text), size)
    if count > 1 and _boundary(document, count - 1, size) >= len(document.text):
        count -= 1
    return count


def _window(document: Document, k: int, count: int, size: int) -> TextWindow:
    start = _boundary(document, k, size)
    end = _boundary(document, k + 1, size) if k + 1 < count else len(document.text)
    return TextWindow(
        k + 1, count, start, max(start, end), len(document.text)
    )  # max: a pathological chain of moves


def window_number(document: Document, number: int | str | None, size: int | None = None) -> TextWindow:
    """Part ``number`` (from 1; a missing or bad one is the first, one past the end the last)."""
    size = size or DOCUMENT_WINDOW_CHARS
    count = _count(document, size)
    try:
        k = int(number or 1) - 1
    except (TypeError, ValueError):
        k = 0
    return _window(document, min(max(k, 0), count - 1), count, size)


def window_at(document: Document, offset: int, size: int | None = None) -> TextWindow:
    """The part holding character ``offset`` (a mention's start: the part it belongs to)."""
    size = size or DOCUMENT_WINDOW_CHARS
    count = _count(document, size)
    k = min(max(offset, 0) // size, count - 1)
    if k > 0 and _boundary(document, k, size) > offset:  # the boundary moved past it: the part before
        k -= 1
    return _window(document, k, count, size)


def whole(document: Document) -> TextWindow:
    return TextWindow(1, 1, 0, len(document.text), len(document.text))
