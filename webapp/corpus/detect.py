"""The dictionary matcher of an index version, built once per process for POST /api/link.

The matcher itself is :class:`linker.detect.matcher.DictionaryMatcher` (Aho-Corasick over normalised names,
whole words, longest-leftmost, capitals rule for short forms and acronyms, abbreviations defined in the text);
this module only keeps one per active index version, so a request does not rebuild it (a few hundred
milliseconds for MEDIC). A new index version replaces the oldest once :data:`MAX_MATCHERS` are held.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from linker.detect.matcher import DictionaryMatcher
from linker.detect.spans import Span
from linker.text import TextConfig

__all__ = ["Span", "DictionaryMatcher", "matcher_for_index"]

MAX_MATCHERS = 8

_lock = threading.Lock()
_matchers: dict[int, DictionaryMatcher] = {}


def matcher_for_index(index_version_id: int, names: Iterable[str], cfg: TextConfig | None = None) -> DictionaryMatcher:
    """The matcher of an index version's names, built once per process.

    Raw names (as the dictionary writes them) are best: only they tell an acronym ("CADASIL") from a word;
    normalised names work too, with the capitals rule then applying to short names only.
    """
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
