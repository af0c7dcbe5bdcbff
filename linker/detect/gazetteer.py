"""Dictionary features for the mention tagger: which tokens a dictionary match covers.

A tagger that reads only the text has to learn every disease name from a few hundred abstracts; the dictionary
already knows tens of thousands. The classic remedy in NER is a gazetteer feature: each token is told whether a
dictionary match begins there (``B``), continues there (``I``) or does not cover it (``O``), and the network
learns how far to trust it: a match in the wrong sense ("strain"), a name longer than the annotators' span, a
mention the dictionary lacks. On a transformer the feature is one learned vector per label added to the token's
input embedding (started at zero, so the untrained tagger is the plain one).

The matcher is :class:`~linker.detect.matcher.DictionaryMatcher` over the dictionary's names plus the training
mentions' texts. Those texts are what makes the feature informative (they are the annotators' spellings and
span conventions), and also what makes it dangerous to train with: on a training document its own mentions
would be matched perfectly, the network would learn to copy the feature, and on new text (where a match is
right far less often) it would fail. So training documents are **cross-fitted** (:func:`cross_fitted_matchers`):
the documents are cut into folds, and a document's features come from a matcher over the dictionary plus the
mentions of the *other* folds only, as a new document's will.

The names are kept in the tagger's folder (``gazetteer.txt.gz``, one raw name per line), so a saved tagger
reads text exactly as it was trained to, whatever the dictionary has become since.
"""

from __future__ import annotations

import gzip
from array import array
from collections.abc import Iterable, Sequence
from pathlib import Path

from linker.detect.matcher import DictionaryMatcher
from linker.detect.spans import Span

__all__ = ["Gazetteer", "GAZETTEER_FILE", "FEATURES", "FoldMatcher", "cross_fitted_matchers", "token_features"]

GAZETTEER_FILE = "gazetteer.txt.gz"
# Token feature values: outside every match, the first token of a match, a later token of one.
FEATURE_O, FEATURE_B, FEATURE_I = 0, 1, 2
FEATURES = 3


class Gazetteer:
    """The names a tagger's dictionary feature is matched from, and the matcher over them."""

    def __init__(self, names: Iterable[str]) -> None:
        # Unique, in first-seen order: the file is reproducible and a name given twice is stored once.
        self.names: list[str] = list(dict.fromkeys(n.strip() for n in names if n and n.strip()))
        self.matcher = DictionaryMatcher(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def find(self, text: str) -> list[Span]:
        return self.matcher.find(text)

    def save(self, folder: str | Path) -> None:
        with gzip.open(Path(folder) / GAZETTEER_FILE, "wt", encoding="utf-8") as fh:
            for name in self.names:
                fh.write(name.replace("\n", " ") + "\n")

    @classmethod
    def load(cls, folder: str | Path) -> Gazetteer:
        path = Path(folder) / GAZETTEER_FILE
        try:
            with gzip.open(path, "rt", encoding="utf-8") as fh:
                return cls(line.rstrip("\n") for line in fh)
        except (OSError, EOFError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path}: the tagger's dictionary names cannot be read ({exc})") from exc


def cross_fitted_matchers(
    dictionary_names: Sequence[str], mention_texts: Sequence[Sequence[str]], folds: int
) -> list[FoldMatcher]:
    """One matcher per document: over ``dictionary_names`` plus the mention texts of the documents in the other
    folds (document ``i`` is in fold ``i % folds``). ``mention_texts[i]``: document ``i``'s mention strings.

    The dictionary's automaton is built once and shared: only the mention texts differ between folds, and a
    dictionary of millions of names would not fit in memory once per fold."""
    if folds < 2:
        raise ValueError(f"cross-fitting needs at least 2 folds, not {folds}")
    by_fold: list[set[str]] = [set() for _ in range(folds)]
    for i, texts in enumerate(mention_texts):
        by_fold[i % folds].update(texts)
    shared = DictionaryMatcher(dictionary_names)
    matchers = [FoldMatcher(shared, DictionaryMatcher(sorted(set().union(*(by_fold[j] for j in range(folds) if j != k)))))
                for k in range(folds)]
    return [matchers[i % folds] for i in range(len(mention_texts))]


class FoldMatcher:
    """The dictionary's matcher and one fold's mention matcher read as one: the spans of both, longest-leftmost
    (as one matcher over both name lists finds them, short of a name that only a mix of the two spells)."""

    def __init__(self, dictionary: DictionaryMatcher, mentions: DictionaryMatcher) -> None:
        self.dictionary = dictionary
        self.mentions = mentions

    def __contains__(self, name: object) -> bool:
        return name in self.dictionary or name in self.mentions

    def find(self, text: str) -> list[Span]:
        both = sorted([*self.dictionary.find(text), *self.mentions.find(text)], key=lambda s: (s.start, -s.end))
        out: list[Span] = []
        for span in both:
            if not out or span.start >= out[-1].end:
                out.append(span)
        return out


def token_features(token_starts: Sequence[int], spans: Sequence[Span]) -> array[int]:
    """Each token's feature given where it starts (character offsets, ascending) and the matched ``spans``
    (sorted, non-overlapping): ``B`` for the first token starting inside a span, ``I`` for the later ones."""
    out = array("b", bytes(len(token_starts)))
    k = 0
    current = -1  # the span whose first token has been seen
    for t, start in enumerate(token_starts):
        while k < len(spans) and spans[k].end <= start:
            k += 1
        if k < len(spans) and spans[k].start <= start:
            out[t] = FEATURE_I if current == k else FEATURE_B
            current = k
    return out
