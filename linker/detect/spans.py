"""Detected mention spans, the one type every detector returns and every caller reads.

A span counts characters of the text it was found in (``text[start:end] == span.text``). ``source`` says which
detector produced it: ``matcher`` (dictionary names), ``tagger`` (a trained token classifier), or ``both``
when the two agreed on the same span after merging (:mod:`linker.detect.merge`). ``score`` is the tagger's
confidence (mean probability of the span's labels), 1.0 for a dictionary match.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Span", "MATCHER", "TAGGER", "BOTH", "SOURCES"]

MATCHER = "matcher"
TAGGER = "tagger"
BOTH = "both"
SOURCES = (MATCHER, TAGGER, BOTH)


class Span(NamedTuple):
    start: int
    end: int
    text: str
    source: str = MATCHER
    score: float = 1.0

    def overlaps(self, other: Span) -> bool:
        return self.start < other.end and other.start < self.end

    @property
    def length(self) -> int:
        return self.end - self.start
