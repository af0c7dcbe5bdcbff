"""Short forms defined in a text, tagged wherever they recur: the abbreviation rule every detector shares.

An abstract defines its abbreviations once ("syndrome of inappropriate antidiuretic hormone (SIADH)") and then
writes only the short form. Annotators mark every occurrence; a detector reading words ("SIADH", five capitals)
finds them far less reliably than the long form. So, after a detector has found its spans: for each definition
that Schwartz & Hearst's algorithm finds (:func:`linker.text.find_abbreviations`) whose **long form a span
marks** — a span covering it whole, or a span ending where it ends and starting inside it ("induced [atrial
tachyarrhythmia] (SIAT)": the definition's long form may carry words before the mention) — the short form is
tagged at each whole-word, case-sensitive occurrence no span already overlaps, the one in parentheses included.

With ``drop_undefined`` (the dictionary matcher), a span that *is* a short form whose long form no span marks is
removed: the text said what it means here ("MS (mass spectrometry)"), and it is not a mention.

On BC5CDR-disease dev the rule raises the tagger's exact-span F1 from 0.827 to 0.835 (bench/RESULTS.md,
"mention detection"); a looser rule that also tags every other occurrence of any tagged string lowered it
(precision fell more than recall rose), so only defined short forms are propagated.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence

from linker.detect.spans import Span
from linker.text import find_abbreviations

__all__ = ["propagate_short_forms"]


def propagate_short_forms(text: str, spans: Sequence[Span], source: str, drop_undefined: bool = False) -> list[Span]:
    """``spans`` (sorted, non-overlapping) plus each defined short form's occurrences (with ``source``, score of
    the span that marked its long form), sorted; see the module docstring."""
    spans = list(spans)
    if "(" not in text:  # every definition Schwartz & Hearst find is written with parentheses
        return spans
    definitions = find_abbreviations(text)
    if not definitions:
        return spans
    tagged: list[tuple[str, float]] = []
    undefined: set[str] = set()
    for short, long in definitions.items():
        marked = _long_form_marked(text, long, spans)
        if marked is not None:
            tagged.append((short, marked.score))
        else:
            undefined.add(short)
    if drop_undefined and undefined:
        spans = [s for s in spans if s.text not in undefined]
    if not tagged:
        return spans
    added: list[Span] = []
    # Longest short forms first, so that "VSDs" claims its occurrences before "VSD" looks for them.
    for short, score in sorted(tagged, key=lambda t: len(t[0]), reverse=True):
        for m in re.finditer(rf"(?<![^\W_]){re.escape(short)}(?![^\W_])", text):
            span = Span(m.start(), m.end(), m.group(), source, score)
            if not _overlaps_any(span, spans) and not any(span.overlaps(a) for a in added):
                added.append(span)
    return sorted(spans + added) if added else spans


def _long_form_marked(text: str, long: str, spans: list[Span]) -> Span | None:
    """The span that marks an occurrence of ``long``: covering it whole, or ending where it ends from inside it."""
    at = text.find(long)
    while at >= 0:
        end = at + len(long)
        k = bisect_left(spans, (at,))
        for s in spans[max(k - 1, 0) :]:
            if s.start >= end:
                break
            if (s.start <= at and s.end >= end) or (s.start >= at and s.end == end):
                return s
        at = text.find(long, at + 1)
    return None


def _overlaps_any(span: Span, spans: list[Span]) -> bool:
    """Whether a span of the sorted, non-overlapping ``spans`` overlaps ``span``."""
    k = bisect_left(spans, (span.start,))
    # Only the span just before ``k`` and those from ``k`` on can reach ``span``.
    for s in spans[max(k - 1, 0) :]:
        if s.start >= span.end:
            break
        if s.overlaps(span):
            return True
    return False
