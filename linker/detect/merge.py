"""Merging the dictionary matcher's spans with the tagger's into one non-overlapping list.

First, a span that both detectors found (same start and end) becomes one span with source ``both`` and the
tagger's score. The remaining spans are then taken one by one in an order set by the rule, each kept when it
overlaps no span already kept:

- ``tagger-first`` (the default): every tagger span is kept; a matcher span is added only where it overlaps
  no tagger span. The tagger has learnt the corpus's boundaries ("renal hamartomas", not "hamartomas"); the
  dictionary fills in the names it missed.
- ``matcher-first``: the mirror image: every matcher span is kept, a tagger span only where it overlaps no
  matcher span (for a curated dictionary whose names are the mentions wanted).
- ``union-longest``: where spans of the two detectors overlap, the longer is kept, the tagger's on a tie;
  spans that overlap nothing are all kept.

A tagger that reads dictionary features (:mod:`linker.detect.gazetteer`) has already weighed every match of the
names it was trained with, and left out those its corpus does not annotate. Given ``tagger_knows`` (the
tagger's :meth:`~linker.detect.tagger.Tagger.knows`), a matcher span of such a name is therefore kept only where
the tagger found the same span (as ``both``); matcher spans of names new to the tagger (curator synonyms added
since it was trained) are merged by the rule as before. Adding the known names' spans back lowered exact-span F1
on NCBI dev from 0.852 to 0.826 (bench/RESULTS.md, "mention detection").

Each detector's own spans are expected not to overlap one another (both detectors guarantee it); were they
to, the same order resolves them (longer first, then leftmost), so the output never overlaps. The output is
sorted by (start, end).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from linker.detect.spans import BOTH, Span

__all__ = ["merge", "RULES"]

RULES = ("tagger-first", "matcher-first", "union-longest")
# The rank of (the tagger's side, the matcher's side) under each "-first" rule; 0 is a span both found.
_SIDE_RANK = {"tagger-first": (1, 2), "matcher-first": (2, 1)}


def merge(
    matcher_spans: Sequence[Span], tagger_spans: Sequence[Span], rule: str = "tagger-first",
    tagger_knows: Callable[[str], bool] | None = None,
) -> list[Span]:
    """One non-overlapping list of the two detectors' spans of a text, merged by ``rule``; with ``tagger_knows``,
    matcher spans of names the tagger knew only where it found them too (see the module)."""
    if rule not in RULES:
        raise ValueError(f"unknown merge rule {rule!r}; expected one of {', '.join(RULES)}")
    tagged = {(s.start, s.end) for s in tagger_spans}
    matched = {(s.start, s.end) for s in matcher_spans}
    # (span, side): side 0 is the tagger's (and a span both found), 1 the matcher's; the tie-breaker below.
    candidates: list[tuple[Span, int]] = [
        (Span(s.start, s.end, s.text, BOTH, s.score) if (s.start, s.end) in matched else s, 0) for s in tagger_spans
    ]
    candidates.extend((s, 1) for s in matcher_spans
                      if (s.start, s.end) not in tagged and not (tagger_knows is not None and tagger_knows(s.text)))

    def order(candidate: tuple[Span, int]) -> tuple[int, int, int]:
        span, side = candidate
        if rule == "union-longest":
            return (-span.length, side, span.start)
        # A span both detectors found goes first under either "-first" rule; then the preferred detector's.
        rank = 0 if span.source == BOTH else _SIDE_RANK[rule][side]
        return (rank, -span.length, span.start)

    kept: list[Span] = []
    for span, _ in sorted(candidates, key=order):
        if not any(span.overlaps(k) for k in kept):
            kept.append(span)
    return sorted(kept, key=lambda s: (s.start, s.end))
