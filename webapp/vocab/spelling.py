"""Spelling correction of concept search's typed words against the dictionary's own words (:class:`Term`).

A typed word that is neither a word of the dictionary nor, for the last word (still being typed), the start of
one is replaced by the dictionary's words one edit away (a letter dropped, added or changed, or two neighbours
swapped: the slips of typing), the most frequent first; failing those, by its trigram-similar words ranked by edit
distance. Search engines correct against their term dictionary the same way. The dictionary's words are tens of
thousands of rows; ranking every name by trigram word similarity instead read tens of thousands of the 3 million
names of a UMLS-size dictionary for a typo of a common word (450 ms for "otpic neuropathy").
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import product

from django.contrib.postgres.search import TrigramSimilarity
from django.db.models import QuerySet, Sum

from webapp.vocab.models import DictionaryVersion, Term

__all__ = ["corrections", "edits1", "osa_distance"]

ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
MIN_WORD = 3  # shorter words are not corrected: nearly every one- or two-letter string is one edit from a word
ALTERNATIVES = 3  # corrections kept per word
MAX_QUERIES = 4  # corrected queries tried, fewest and likeliest changes first
TRIGRAM_CANDIDATES = 20


def edits1(word: str) -> set[str]:
    """Every string one edit from ``word``: a deletion, a transposition of neighbours, a substitution, an insertion."""
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    deletes = {a + b[1:] for a, b in splits if b}
    transposes = {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
    replaces = {a + c + b[1:] for a, b in splits if b for c in ALPHABET}
    inserts = {a + c + b for a, b in splits for c in ALPHABET}
    return (deletes | transposes | replaces | inserts) - {word}


def osa_distance(a: str, b: str) -> int:
    """Optimal string alignment distance: Levenshtein's edits plus a swap of neighbours counted as one."""
    rows = [list(range(len(b) + 1))] + [[i] + [0] * len(b) for i in range(1, len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            rows[i][j] = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                rows[i][j] = min(rows[i][j], rows[i - 2][j - 2] + 1)
    return rows[len(a)][len(b)]


def corrections(versions: Sequence[DictionaryVersion], query: str) -> list[str]:
    """Corrected forms of a normalised ``query``, likeliest first (none when every word is the dictionary's)."""
    words = query.split()
    terms = Term.objects.filter(version__in=versions, names__gt=0)
    shifted = _shifted_boundaries(words)
    asked = set(words) | {w for pair in shifted.values() for w in pair}
    known = set(terms.filter(term__in=asked).values_list("term", flat=True))
    words = _mend_boundaries(words, shifted, known)
    options: list[list[str]] = []
    for position, word in enumerate(words):
        last = position == len(words) - 1
        if word in known or len(word) < MIN_WORD or (last and _starts_a_term(terms, word)):
            options.append([word])
        else:
            options.append(_alternatives(terms, word) or [word])
    if all(len(o) == 1 for o in options):
        fixed = " ".join(o[0] for o in options)
        return [fixed] if fixed != query else []
    combos = sorted(product(*(range(len(o)) for o in options)), key=lambda ranks: (sum(ranks), ranks))
    out = [" ".join(o[r] for o, r in zip(options, ranks, strict=True)) for ranks in combos[:MAX_QUERIES]]
    return [q for q in out if q != query]


def _shifted_boundaries(words: Sequence[str]) -> dict[tuple[int, int], tuple[str, str]]:
    """(i, shift) -> words i and i+1 with one letter moved across the space between them: -1 moves the last
    letter of word i to the next word ("decreasei n" -> "decrease in"), +1 the first of the next word back
    ("gastri clymphoma" -> "gastric lymphoma"): a space typed one key early or late."""
    out: dict[tuple[int, int], tuple[str, str]] = {}
    for i in range(len(words) - 1):
        a, b = words[i], words[i + 1]
        if len(a) > 1:
            out[(i, -1)] = (a[:-1], a[-1] + b)
        if len(b) > 1:
            out[(i, +1)] = (a + b[0], b[1:])
    return out


def _mend_boundaries(words: Sequence[str], shifted: dict[tuple[int, int], tuple[str, str]],
                     known: set[str]) -> list[str]:
    """``words`` with each misplaced space moved where neither word it separates is the dictionary's (or long
    enough to be corrected) and both words it makes are: one unknown word beside a known one is a typo within that
    word ("ilp and" is "lip and", not "il pand")."""
    out = list(words)
    for (i, _), (a, b) in shifted.items():
        pair = (out[i], out[i + 1])
        if "".join(pair) == a + b and a in known and b in known \
                and all(w not in known or len(w) < MIN_WORD for w in pair) and any(w not in known for w in pair):
            out[i], out[i + 1] = a, b
    return out


def _starts_a_term(terms: QuerySet[Term], word: str) -> bool:
    return terms.filter(term__gte=word, term__lt=word + "\U0010ffff").exists()


def _alternatives(terms: QuerySet[Term], word: str) -> list[str]:
    """The dictionary's words one edit away, most names first; else trigram-similar words by edit distance."""
    near = (terms.filter(term__in=edits1(word)).values("term")
            .annotate(n=Sum("names")).order_by("-n", "term")[:ALTERNATIVES])
    found = [row["term"] for row in near]
    if found:
        return found
    similar = (terms.filter(term__trigram_similar=word).values("term")
               .annotate(n=Sum("names"), similarity=TrigramSimilarity("term", word))
               .order_by("-similarity", "term")[:TRIGRAM_CANDIDATES])
    ranked = sorted((osa_distance(word, row["term"]), -row["n"], row["term"]) for row in similar)
    return [term for distance, _, term in ranked if distance <= max(2, len(word) // 3)][:ALTERNATIVES]
