"""BIO labels from spans and back, on words that keep their exact character offsets.

A token classifier labels words, not characters: each word is ``B`` (begins a mention), ``I`` (inside one, after
its first word) or ``O`` (outside every mention). :func:`words` cuts a text into words — runs of letters and
digits, combining marks kept with their letter, and every other non-space character (punctuation, symbols) as a
word of its own — and remembers where each one is, so labels go back to exact characters of the text.

- :func:`to_bio` labels the words of ``spans``. A span whose edge falls inside a word is **expanded to whole
  words** (``"breast cancers"`` annotated as ``"breast cancer"`` labels both words, and comes back as the
  whole of ``"breast cancers"``): a word-level labeller cannot say less than a word, and dropping the cut word
  would lose the mention. Overlapping spans cannot both be labelled: the one starting first (the longer at the
  same start) is kept.
- :func:`viterbi_bio` decodes a tagger's label probabilities: the most probable labels in which ``I`` never
  follows ``O`` nor opens the text.
- :func:`from_bio` reads spans off labels. A ``B`` starts a span, an ``I`` continues the open one — and an
  ``I`` with no span open (after ``O``, or first) starts one, as the usual lenient BIO reading does: the
  classifier said "mention" there, and a missing ``B`` should not throw that away. Labels may carry a type
  (``B-Disease``); an ``I-`` of another type than the open span's starts a new span.

Spans that start and end on word edges come back exactly: ``from_bio(text, w, to_bio(w, spans))`` gives
``spans``' offsets when they do not overlap.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from linker.detect.spans import TAGGER, Span

__all__ = ["words", "to_bio", "from_bio", "viterbi_bio", "OUTSIDE", "BEGIN", "INSIDE", "LABELS"]

OUTSIDE, BEGIN, INSIDE = "O", "B", "I"
# A tagger's labels in the order of its classifier's columns, without a type.
LABELS: tuple[str, ...] = (OUTSIDE, BEGIN, INSIDE)

# Combining marks stay with the letter they modify ("e" + U+0301 is one word "é"), as in the dictionary matcher:
# a mark alone would be a one-character "word" the tokenizer strips away.
_MARKS = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
_WORD = re.compile(rf"[^\W_](?:[^\W_]|[{_MARKS}])*|[^\w\s]|_")


def words(text: str) -> list[tuple[int, int]]:
    """(start, end) of each word of ``text``: letters and digits together, each other non-space character alone.

    >>> words("Type-2 diabetes.")
    [(0, 4), (4, 5), (5, 6), (7, 15), (15, 16)]
    """
    return [m.span() for m in _WORD.finditer(text)]


def _offsets(span: Any) -> tuple[int, int]:
    """A span's (start, end): a :class:`Span`, a ``GoldMention`` or any object with ``start``/``end``, or a pair."""
    if hasattr(span, "start") and hasattr(span, "end") and not isinstance(span, tuple | list):
        return int(span.start), int(span.end)
    if isinstance(span, Span):
        return span.start, span.end
    return int(span[0]), int(span[1])


def to_bio(word_offsets: Sequence[tuple[int, int]], spans: Iterable[Any]) -> list[str]:
    """One label per word: ``B``/``I`` for the words a span touches (expanded to whole words), ``O`` elsewhere.

    ``spans`` are :class:`Span`, ``GoldMention`` or ``(start, end)`` pairs; a span touching no word (only
    spaces) labels nothing.
    """
    from bisect import bisect_right

    labels = [OUTSIDE] * len(word_offsets)
    ends = [e for _, e in word_offsets]
    for start, end in sorted((_offsets(s) for s in spans), key=lambda se: (se[0], -se[1])):
        if end <= start:
            continue
        first = bisect_right(ends, start)  # the first word ending after the span starts
        last = first
        while last < len(word_offsets) and word_offsets[last][0] < end:
            last += 1
        if first == last or any(labels[i] != OUTSIDE for i in range(first, last)):
            continue  # no word inside, or overlaps a span already labelled
        labels[first] = BEGIN
        for i in range(first + 1, last):
            labels[i] = INSIDE
    return labels


def _split(label: str) -> tuple[str, str]:
    """``"B-Disease"`` -> ``("B", "Disease")``; ``"I"`` -> ``("I", "")``."""
    tag, _, kind = label.partition("-")
    return tag, kind


def from_bio(
    text: str,
    word_offsets: Sequence[tuple[int, int]],
    labels: Sequence[str],
    scores: Sequence[float] | None = None,
) -> list[Span]:
    """The spans the labels mark (source "tagger"), each from its first word's start to its last word's end;
    ``score`` is the mean of its words' ``scores`` (the probability of each word's label), 1.0 without them."""
    if len(labels) != len(word_offsets):
        raise ValueError(f"{len(labels)} labels for {len(word_offsets)} words")
    if scores is not None and len(scores) != len(labels):
        raise ValueError(f"{len(scores)} scores for {len(labels)} labels")
    spans: list[Span] = []
    first = -1  # the open span's first word, -1 when none is open
    open_kind = ""

    def close(last: int) -> None:
        start, end = word_offsets[first][0], word_offsets[last][1]
        score = 1.0 if scores is None else float(sum(scores[first : last + 1])) / (last + 1 - first)
        spans.append(Span(start, end, text[start:end], TAGGER, score))

    for i, label in enumerate(labels):
        tag, kind = _split(label)
        if tag == INSIDE and first >= 0 and kind == open_kind:
            continue
        if first >= 0:
            close(i - 1)
            first = -1
        if tag in (BEGIN, INSIDE):
            first, open_kind = i, kind
        elif tag != OUTSIDE:
            raise ValueError(f"unknown BIO label {label!r}")
    if first >= 0:
        close(len(labels) - 1)
    return spans


def viterbi_bio(probs: np.ndarray) -> np.ndarray:
    """The most probable label index sequence (rows: words, columns: :data:`LABELS`) in which ``I`` (index 2)
    never follows ``O`` (index 0) nor comes first. Words are independent given the network, so a sequence's
    score is the sum of its labels' log probabilities; the constraint is what links neighbours."""
    n = len(probs)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    logp = np.log(np.clip(probs.astype(np.float64), 1e-12, None))
    # allowed[previous, next]: every move but O -> I.
    allowed = np.ones((3, 3), dtype=bool)
    allowed[0, 2] = False
    penalty = np.where(allowed, 0.0, -np.inf)
    score = logp[0].copy()
    score[2] = -np.inf  # no mention starts with I
    back = np.zeros((n, 3), dtype=np.int8)
    for w in range(1, n):
        total = score[:, None] + penalty  # (previous, next)
        back[w] = total.argmax(axis=0)
        score = total[back[w], np.arange(3)] + logp[w]
    out = np.zeros(n, dtype=np.int64)
    out[-1] = int(score.argmax())
    for w in range(n - 1, 0, -1):
        out[w - 1] = back[w, out[w]]
    return out
