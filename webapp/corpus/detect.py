"""A fast dictionary matcher: mentions are the longest runs of words that spell a dictionary name.

Case-insensitive and word-bounded, over names normalised as the linker normalises them (lower case,
punctuation as spaces, NFKC, American spelling), so "Non-insulin-dependent diabetes" in a text matches
the name "non insulin dependent diabetes". Matching walks the text once: a set of every name's word
prefixes lets each start position stop as soon as no longer name can match. One matcher is built per index
version and kept for the process's life (a second index replaces the first).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from typing import NamedTuple

from linker.text import TextConfig, normalize

__all__ = ["Span", "DictionaryMatcher", "matcher_for_index"]

_WORD = re.compile(r"[^\W_]+")
MIN_CHARS = 3  # shorter names ("t", "ms", "pd") are almost always something else in running text
MAX_MATCHERS = 8
ACRONYM_CHARS = 3  # one-word names of this length match only where the text writes them in capitals


class Span(NamedTuple):
    start: int
    end: int
    text: str


class DictionaryMatcher:
    def __init__(self, names: Iterable[str], cfg: TextConfig | None = None) -> None:
        self.cfg = cfg or TextConfig()
        self.names: set[str] = set()
        self.prefixes: set[str] = set()
        for name in names:
            words = name.split()
            if len(name) < MIN_CHARS or (len(words) == 1 and name.isdigit()):
                continue
            self.names.add(name)
            for n in range(1, len(words)):
                self.prefixes.add(" ".join(words[:n]))

    def __len__(self) -> int:
        return len(self.names)

    def find(self, text: str) -> list[Span]:
        """Non-overlapping longest matches, left to right."""
        words = [(m.start(), m.end(), normalize(m.group(), self.cfg)) for m in _WORD.finditer(text)]
        spans: list[Span] = []
        i = 0
        while i < len(words):
            key = ""
            best = -1
            for j in range(i, len(words)):
                key = f"{key} {words[j][2]}" if key else words[j][2]
                if key in self.names and self._plausible(text, words[i], j == i):
                    best = j
                if key not in self.prefixes:
                    break
            if best < 0:
                i += 1
                continue
            start, end = words[i][0], words[best][1]
            spans.append(Span(start, end, text[start:end]))
            i = best + 1
        return spans

    def _plausible(self, text: str, word: tuple[int, int, str], single: bool) -> bool:
        if not single or len(word[2]) > ACRONYM_CHARS:
            return True
        return text[word[0] : word[1]].isupper()


_lock = threading.Lock()
_matchers: dict[int, DictionaryMatcher] = {}


def matcher_for_index(index_version_id: int, names: Iterable[str], cfg: TextConfig | None = None) -> DictionaryMatcher:
    """The matcher of an index version's (already normalised) names, built once per process."""
    matcher = _matchers.get(index_version_id)
    if matcher is None:
        with _lock:
            matcher = _matchers.get(index_version_id)
            if matcher is None:
                matcher = DictionaryMatcher(names, cfg)
                while len(_matchers) >= MAX_MATCHERS:  # one per active dictionary; retired indexes go first
                    del _matchers[next(iter(_matchers))]
                _matchers[index_version_id] = matcher
    return matcher
