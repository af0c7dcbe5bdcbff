"""A mention as the re-ranker reads it: its normalised query and a window of the text around it."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["MentionSpan", "MentionContext", "mention_context", "DEFAULT_WINDOW_WORDS"]

DEFAULT_WINDOW_WORDS = 8  # words on each side (the paper takes 5; a sentence-sized window measured better)
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class MentionSpan:
    """A mention of a document: its text and, when known, its character offsets in the document."""

    text: str
    start: int = -1
    end: int = -1


@dataclass(frozen=True)
class MentionContext:
    query: str  # the linker's normalised query for one part (abbreviations expanded)
    left: str
    mention: str
    right: str

    def window(self) -> str:
        return f"{self.left} {self.mention} {self.right}".strip()


def mention_context(span: MentionSpan, document_text: str | None, query: str, words: int = DEFAULT_WINDOW_WORDS) -> MentionContext:
    """``words`` words each side of the mention. Without offsets the mention's first occurrence is used;
    a mention not found in the text (or no text) has no context, only itself."""
    text = document_text or ""
    start, end = span.start, span.end
    if not (0 <= start < end <= len(text)) or text[start:end] != span.text:
        found = text.find(span.text) if span.text else -1
        start, end = (found, found + len(span.text)) if found >= 0 else (-1, -1)
    if start < 0:
        return MentionContext(query, "", span.text, "")
    left_words = _WORD.findall(text[max(0, start - 40 * words) : start])[-words:] if words else []
    right_words = _WORD.findall(text[end : end + 40 * words])[:words] if words else []
    return MentionContext(query, " ".join(left_words), text[start:end], " ".join(right_words))
