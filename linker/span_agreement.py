"""How far two annotators agree on what the mentions are: pairwise F1 of the spans each kept, exact and by overlap.

Before two annotators can agree on a concept they must agree on what the mention is. Pairwise F1 is symmetric
(taking either annotator as the reference swaps precision and recall), so it needs no gold standard. Exact F1
counts identical offsets; overlap F1 forgives boundary disputes ("breast cancer" vs "cancer"), which are common
and usually harmless for linking. A *span* is ``(start, end)`` character offsets (end exclusive) or
``(document, start, end)``: items before the last two group spans, so spans of different documents never overlap.
"""

from __future__ import annotations

import bisect
from collections.abc import Hashable, Iterable
from dataclasses import dataclass

__all__ = ["Span", "SpanAgreement", "span_agreement"]

Span = tuple[int, int] | tuple[Hashable, int, int]


@dataclass(frozen=True)
class SpanAgreement:
    """How two annotators' kept spans match. F1 is None when neither kept any span (nothing to compare)."""

    spans_a: int
    spans_b: int
    exact: int  # spans with identical offsets
    overlap: int  # one-to-one matches of overlapping spans, the exact ones included
    exact_f1: float | None
    overlap_f1: float | None


def _f1(matches: int, total: int) -> float | None:
    # Pairwise F1 = 2 * matches / (|A| + |B|), the same whichever annotator is taken as the reference.
    return 2 * matches / total if total else None


def _overlap_matches(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> int:
    """One-to-one matches between two lists of distinct non-identical spans of one document, greedily by the
    longest overlap: a long shared stretch is the likelier reading of "the same mention" when one span overlaps
    two (ties broken by offsets, so the count is deterministic)."""
    b = sorted(b)
    starts = [s for s, _ in b]
    candidates: list[tuple[int, tuple[int, int], tuple[int, int]]] = []
    for sa, ea in a:
        # Only spans of b starting before a ends can overlap it.
        for sb, eb in b[: bisect.bisect_left(starts, ea)]:
            length = min(ea, eb) - max(sa, sb)
            if length > 0:
                candidates.append((-length, (sa, ea), (sb, eb)))
    candidates.sort()
    used_a: set[tuple[int, int]] = set()
    used_b: set[tuple[int, int]] = set()
    for _, span_a, span_b in candidates:
        if span_a not in used_a and span_b not in used_b:
            used_a.add(span_a)
            used_b.add(span_b)
    return len(used_a)


def _by_document(spans: Iterable[Span]) -> dict[tuple[Hashable, ...], set[tuple[int, int]]]:
    out: dict[tuple[Hashable, ...], set[tuple[int, int]]] = {}
    for span in spans:
        if len(span) < 2:
            raise ValueError(f"a span is (start, end) or (document, start, end), not {span!r}")
        start, end = span[-2], span[-1]
        out.setdefault(tuple(span[:-2]), set()).add((start, end))
    return out


def span_agreement(a: Iterable[Span], b: Iterable[Span]) -> SpanAgreement:
    """Exact and overlap F1 between the spans two annotators kept (rejected mentions left out by the caller).

    Exact matches are paired first, then the remaining spans one-to-one by longest overlap, so a span is never
    matched twice and the overlap count is never below the exact count.
    """
    docs_a, docs_b = _by_document(a), _by_document(b)
    n_a = sum(len(s) for s in docs_a.values())
    n_b = sum(len(s) for s in docs_b.values())
    exact = overlap = 0
    for doc, spans_a in docs_a.items():
        spans_b = docs_b.get(doc, set())
        same = spans_a & spans_b
        exact += len(same)
        overlap += len(same) + _overlap_matches(sorted(spans_a - same), sorted(spans_b - same))
    return SpanAgreement(n_a, n_b, exact, overlap, _f1(exact, n_a + n_b), _f1(overlap, n_a + n_b))
