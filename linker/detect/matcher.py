"""A dictionary matcher: mentions are the longest runs of whole words that spell a dictionary name.

Names and text go through the same steps: the text is cut into words (``[^\\W_]+``, combining marks kept
with their letter) whose character offsets are remembered, each word is normalised with
:func:`linker.text.normalize` (lower case, NFKC, American spelling), and the words are joined by single
spaces.
One Aho-Corasick automaton (``pyahocorasick``) holds every name as ``" name "``, so it can only match whole
words of that joined string; a match is mapped back to word indices, and from them to the exact characters of
the original text (``text[span.start:span.end] == span.text``, whatever the text's accents, Greek letters,
non-breaking spaces or multi-code-point characters).

Rules, in order:

1. names shorter than ``min_chars`` characters, pure numbers, and the words of :data:`STOP_WORDS` are left
   out;
2. capitals: a one-word name of at most :data:`SHORT_FORM_CHARS` characters ("all", "cad"), or a name that the
   dictionary writes only as an all-capital acronym ("CADASIL", "HNPCC"), matches only where the text writes
   it without lower-case letters ("ALL" is acute lymphoblastic leukemia, "all" is not);
3. longest-leftmost: overlapping candidates are resolved left to right, the longest at each start winning;
4. abbreviations defined in the text (:mod:`linker.detect.short_forms`, shared with the tagger): when a
   matched span marks the long form of a definition, its short form is tagged wherever it recurs in the text
   as a whole, case-sensitive word, even when the dictionary lacks it or it is short. A short form whose long
   form was not matched is not tagged by this rule, and the dictionary's own match of it is dropped: the text
   said what it means here ("MS (mass spectrometry)"), and that is not a name of the dictionary.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import ahocorasick

from linker.detect.short_forms import propagate_short_forms
from linker.detect.spans import MATCHER, Span
from linker.text import TextConfig, normalize

__all__ = ["DictionaryMatcher", "STOP_WORDS", "SHORT_FORM_CHARS", "ACRONYM_MAX_CHARS", "word_offsets"]

# Combining marks stay with the letter they modify: "e" + U+0301 is one word "é", as NFKC (which normalize
# applies) composes it; splitting there would leave an "e" that matches names it should not.
_MARKS = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
_WORD = re.compile(rf"[^\W_](?:[^\W_]|[{_MARKS}])*")

# One-word names of at most this many characters match only where the text writes them in capitals: in
# running text "all", "cad", "pad", "men" are words, while "ALL", "CAD", "PAD", "MEN" are diseases.
SHORT_FORM_CHARS = 3
# A name written in the dictionary as one token without lower-case letters is an acronym ("CADASIL",
# "HNPCC", "DM1") when it is at most this long; longer all-capital tokens are OMIM's upper-case words
# ("DEAFNESS", "ACHONDROGENESIS"), whose lower-case spelling in a text is the disease.
ACRONYM_MAX_CHARS = 7

# Common words that are also one-word names in MEDIC 2012 and CTD and that texts use in another sense. Each
# was found by matching MEDIC names alone over NCBI disease train+dev, and CTD names alone over BC5CDR train,
# and counting the one-word matches that overlap no gold mention (NCBI / BC5CDR; none of them is ever a gold
# mention on its own): "disease" 191 / 23, "syndrome" 21 / 22, "diseases" 12 / 4, "syndromes" 4 / 2 (MeSH's
# generic headings; the gold marks the whole name, "Tay-Sachs disease"), "included" 16 / 34 (OMIM's
# "..., INCLUDED" suffix left as a name), "strains" 10 / 20, "strain" 4 / 10 ("mouse strains", MeSH "Sprains
# and Strains"), "recurrence" 3 / 16, "relapse" 0 / 6, "emergency" 0 / 14; plurals for symmetry. With a
# dictionary of names plus training mentions, the list raises exact precision on NCBI dev from 0.698 to 0.736
# and on BC5CDR dev from 0.841 to 0.873 with exact recall unchanged. Short words ("all", "men", "can") need no
# entry: the capitals rule already keeps them to "ALL", "MEN". Words a corpus annotates by its own guidelines
# ("death": never gold in NCBI, 26 gold mentions in BC5CDR train) stay out: that is for the tagger to learn.
STOP_WORDS: frozenset[str] = frozenset(
    {
        "disease", "diseases", "syndrome", "syndromes", "included", "strain", "strains",
        "recurrence", "recurrences", "relapse", "relapses", "emergency", "emergencies",
    }
)

# The per-word normalisation cache is cleared when it grows past this many words (a few tens of MB at most).
_CACHE_MAX = 1 << 18


def word_offsets(text: str) -> list[tuple[int, int]]:
    """(start, end) of each word of ``text``, as the matcher cuts it."""
    return [m.span() for m in _WORD.finditer(text)]


def _is_acronym(raw: str) -> bool:
    raw = raw.strip()
    if not raw or len(raw) > ACRONYM_MAX_CHARS or any(c.isspace() for c in raw):
        return False
    letters = [c for c in raw if c.isalpha()]
    return len(letters) >= 2 and not any(c.islower() for c in letters)


def _no_lower(s: str) -> bool:
    return not any(c.islower() for c in s)


class DictionaryMatcher:
    """Longest-leftmost, word-bounded, case-insensitive matching of dictionary names in texts.

    ``names`` may be raw ("Non-Insulin-Dependent Diabetes") or already normalised: normalising again changes
    nothing. Raw names are better where they are at hand, since only they tell an acronym ("CADASIL") from a
    word; from normalised names only the short-name capitals rule can apply.
    """

    def __init__(
        self,
        names: Iterable[str],
        cfg: TextConfig | None = None,
        *,
        stop_words: Iterable[str] | None = None,
        min_chars: int = 3,
    ) -> None:
        self.cfg = cfg or TextConfig()
        self.min_chars = min_chars
        self._cache: dict[str, str] = {}
        self.stop_words: frozenset[str] = frozenset(
            self._key(w) for w in (STOP_WORDS if stop_words is None else stop_words)
        )
        # normalised name -> does every spelling of it in the dictionary read as an acronym?
        acronym_only: dict[str, bool] = {}
        for raw in names:
            key = self._key(raw)
            if not self._keep(key):
                continue
            acronym_only[key] = acronym_only.get(key, True) and _is_acronym(raw)
        self._automaton = ahocorasick.Automaton()
        for key, acronym in acronym_only.items():
            caps = acronym or (" " not in key and len(key) <= SHORT_FORM_CHARS)
            # The value carries what a hit needs: the pattern's length (to find where it starts) and the rule.
            self._automaton.add_word(f" {key} ", (len(key) + 2, caps))
        self._size = len(acronym_only)
        if self._size:
            self._automaton.make_automaton()

    def __len__(self) -> int:
        return self._size

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._size > 0 and self._automaton.exists(f" {self._key(name)} ")

    # --- normalisation -----------------------------------------------------------------------------

    def _word(self, word: str) -> str:
        # Words repeat across texts: normalising each distinct word once makes find() a dictionary lookup
        # per word instead of NFKC + translation + regular expressions.
        out = self._cache.get(word)
        if out is None:
            if len(self._cache) >= _CACHE_MAX:
                self._cache.clear()
            out = self._cache[word] = normalize(word, self.cfg)
        return out

    def _key(self, name: str) -> str:
        """A name as the automaton stores it: normalised whole (entities, punctuation), then word by word
        exactly as a text is, so that both sides are cut into the same words."""
        words = (self._word(m.group()) for m in _WORD.finditer(normalize(name, self.cfg)))
        return " ".join(w for w in words if w)

    def _keep(self, key: str) -> bool:
        too_short = len(key) < self.min_chars
        return not too_short and not key.replace(" ", "").isdigit() and key not in self.stop_words

    # --- matching ----------------------------------------------------------------------------------

    def find(self, text: str) -> list[Span]:
        """Non-overlapping mentions of ``text``, sorted by start (source "matcher", score 1.0)."""
        if not text or not self._size:
            return propagate_short_forms(text, [], MATCHER, drop_undefined=True, marks="covers") if text else []
        starts: list[int] = []  # character offsets of each kept word in the original text
        ends: list[int] = []
        parts: list[str] = []
        first: dict[int, int] = {}  # position in the joined string -> index of the word starting there
        last: dict[int, int] = {}  # position just past a word in the joined string -> that word's index
        pos = 1  # the joined string starts with one space
        for m in _WORD.finditer(text):
            norm = self._word(m.group())
            if not norm:
                continue
            first[pos] = len(parts)
            pos += len(norm)
            last[pos] = len(parts)
            pos += 1
            parts.append(norm)
            starts.append(m.start())
            ends.append(m.end())
        if not parts:
            return []
        haystack = " " + " ".join(parts) + " "
        # For each first word, the last word of the longest name that starts there and passes the rules.
        longest: dict[int, int] = {}
        for end_index, (length, caps) in self._automaton.iter(haystack):
            # The pattern " name " spans haystack[end_index - length + 1 : end_index + 1].
            i = first.get(end_index - length + 2)
            j = last.get(end_index)
            if i is None or j is None:
                continue  # starts or ends inside a word whose normal form has a space ("½" -> "1 2")
            if caps and not _no_lower(text[starts[i] : ends[j]]):
                continue
            if j > longest.get(i, -1):
                longest[i] = j
        spans: list[Span] = []
        next_free = 0
        for a in sorted(longest):
            if a < next_free:
                continue
            b = longest[a]
            spans.append(Span(starts[a], ends[b], text[starts[a] : ends[b]], MATCHER, 1.0))
            next_free = b + 1
        return propagate_short_forms(text, spans, MATCHER, drop_undefined=True, marks="covers")

    def find_many(self, texts: Sequence[str] | Iterable[str]) -> list[list[Span]]:
        return [self.find(t) for t in texts]
