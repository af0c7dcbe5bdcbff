"""The dictionary matcher: whole words, longest-leftmost, capitals for short forms, abbreviations, Unicode."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from linker.detect.matcher import STOP_WORDS, DictionaryMatcher
from linker.detect.spans import Span
from linker.text import normalize

# A dictionary small enough to reason about by hand; every expected span below is exact.
NAMES = [
    "Breast Cancer",
    "Hereditary Breast Cancer",
    "cancer",
    "cancer susceptibility",
    "Ovarian Neoplasms",
    "ovarian cancer",
    "Ataxia-Telangiectasia",
    "Coronary Artery Disease",
    "ALL",  # acute lymphoblastic leukemia: three letters, so only ever in capitals
    "CADASIL",  # an acronym, as the dictionary writes it
    "GOUT",  # upper case in one source, ...
    "Gout",  # ... ordinary in another: then an ordinary word
    "PKD",
    "Huntington's disease",
    "Sjögren syndrome",
    "α-thalassemia",
    "café au lait spots",
    "disease",  # a stop word: never matched on its own
    "MS",  # shorter than min_chars
    "12345",  # a pure number
    "1 2",
]


@pytest.fixture(scope="module")
def matcher() -> DictionaryMatcher:
    return DictionaryMatcher(NAMES)


def spans(matcher: DictionaryMatcher, text: str) -> list[tuple[int, int, str]]:
    found = matcher.find(text)
    for s in found:  # every span is a slice of the text it came from
        assert text[s.start : s.end] == s.text
    return [(s.start, s.end, s.text) for s in found]


def test_spans_are_matcher_spans_with_score_one(matcher: DictionaryMatcher) -> None:
    assert matcher.find("Gout.") == [Span(0, 4, "Gout", "matcher", 1.0)]


def test_longest_name_wins_over_the_names_inside_it(matcher: DictionaryMatcher) -> None:
    text = "A hereditary breast cancer family; breast cancer; cancer."
    assert spans(matcher, text) == [
        (2, 26, "hereditary breast cancer"),
        (35, 48, "breast cancer"),
        (50, 56, "cancer"),
    ]


def test_overlapping_names_leftmost_first(matcher: DictionaryMatcher) -> None:
    # "breast cancer" and "cancer susceptibility" overlap on "cancer": the leftmost wins, then what follows.
    assert spans(matcher, "breast cancer susceptibility") == [(0, 13, "breast cancer")]
    assert spans(matcher, "no cancer susceptibility") == [(3, 24, "cancer susceptibility")]


def test_case_insensitive_with_punctuation_as_word_breaks(matcher: DictionaryMatcher) -> None:
    assert spans(matcher, "OVARIAN CANCER and ataxia telangiectasia") == [
        (0, 14, "OVARIAN CANCER"),
        (19, 40, "ataxia telangiectasia"),
    ]
    assert spans(matcher, "Huntington’s disease") == [(0, 20, "Huntington’s disease")]


def test_only_whole_words_match(matcher: DictionaryMatcher) -> None:
    assert spans(matcher, "cancers, precancer, cancerous, oncogout") == []
    assert spans(matcher, "(cancer)") == [(1, 7, "cancer")]


def test_short_one_word_names_only_in_capitals(matcher: DictionaryMatcher) -> None:
    assert spans(matcher, "ALL relapsed in all of them. All") == [(0, 3, "ALL")]


def test_acronyms_only_in_capitals_unless_also_written_as_words(matcher: DictionaryMatcher) -> None:
    assert spans(matcher, "Cadasil or cadasil, not CADASIL") == [(24, 31, "CADASIL")]
    assert spans(matcher, "gout and GOUT") == [(0, 4, "gout"), (9, 13, "GOUT")]


def test_names_too_short_and_pure_numbers_are_skipped(matcher: DictionaryMatcher) -> None:
    assert spans(matcher, "MS in 12345 and 1 2 cases") == []
    assert "MS" not in matcher and "12345" not in matcher and "Breast-Cancer" in matcher


def test_stop_words_are_not_matched_unless_the_list_is_replaced() -> None:
    assert "disease" in STOP_WORDS
    assert spans(DictionaryMatcher(NAMES), "The disease is rare") == []
    assert spans(DictionaryMatcher(NAMES, stop_words=()), "The disease is rare") == [(4, 11, "disease")]
    assert spans(DictionaryMatcher(NAMES, stop_words=["Gout"]), "gout and GOUT") == []


def test_short_form_of_a_matched_long_form_is_tagged_wherever_it_recurs(matcher: DictionaryMatcher) -> None:
    # "CAD" is not in the dictionary; "AT" has two letters: both are tagged because the text defines them.
    text = "Coronary artery disease (CAD) and ataxia-telangiectasia (AT). CAD, not CADs or at; AT."
    assert spans(matcher, text) == [
        (0, 23, "Coronary artery disease"),
        (25, 28, "CAD"),
        (34, 55, "ataxia-telangiectasia"),
        (57, 59, "AT"),
        (62, 65, "CAD"),
        (83, 85, "AT"),
    ]


def test_short_form_whose_long_form_was_not_matched_is_not_tagged(matcher: DictionaryMatcher) -> None:
    # "AT" is defined as something the dictionary does not know, and "PKD" (a dictionary name) is defined as a
    # kinase: the text says what they mean here, so neither is a disease mention.
    text = "Angiotensin (AT) and protein kinase D (PKD) levels. AT and PKD rose."
    assert spans(matcher, text) == []
    assert spans(matcher, "PKD rose.") == [(0, 3, "PKD")]


def test_accents_in_composed_and_decomposed_form(matcher: DictionaryMatcher) -> None:
    composed = "Sjögren syndrome"
    decomposed = "Sjo\u0308gren syndrome"  # o + combining diaeresis: one more code point
    assert spans(matcher, f"In {composed}.") == [(3, 19, composed)]
    assert spans(matcher, f"In {decomposed}.") == [(3, 20, decomposed)]
    assert spans(matcher, "Café-au-lait spots") == [(0, 18, "Café-au-lait spots")]


def test_greek_letters_and_british_spelling(matcher: DictionaryMatcher) -> None:
    assert spans(matcher, "An α-thalassaemia trait; Α-THALASSEMIA") == [
        (3, 17, "α-thalassaemia"),
        (25, 38, "Α-THALASSEMIA"),
    ]


def test_non_breaking_and_other_spaces(matcher: DictionaryMatcher) -> None:
    text = "breast\u00a0cancer and ovarian\u2009\u2009cancer\nand breast\ncancer"
    assert spans(matcher, text) == [
        (0, 13, "breast\u00a0cancer"),
        (18, 33, "ovarian\u2009\u2009cancer"),
        (38, 51, "breast\ncancer"),
    ]


def test_offsets_count_code_points_after_multi_code_point_characters(matcher: DictionaryMatcher) -> None:
    # A ZWJ emoji sequence (4 code points), an astral letter (one code point, two UTF-16 units) and a
    # combining accent before the mention: offsets stay those of Python's str.
    prefix = "\U0001f469\u200d\u2695\ufe0f \U0001d6fc e\u0301 "
    text = prefix + "ovarian cancer"
    assert spans(matcher, text) == [(len(prefix), len(text), "ovarian cancer")]
    assert len(prefix) == 10


def test_empty_and_wordless_texts(matcher: DictionaryMatcher) -> None:
    assert matcher.find("") == []
    assert matcher.find(" \n\t... ()") == []
    assert DictionaryMatcher([]).find("breast cancer") == []
    assert len(DictionaryMatcher([])) == 0


def test_already_normalised_names_give_the_same_matches() -> None:
    text = "Hereditary breast cancer and Huntington's disease; café au lait spots (CALS)."
    raw = DictionaryMatcher(NAMES)
    once = DictionaryMatcher([normalize(n) for n in NAMES])
    twice = DictionaryMatcher([normalize(normalize(n)) for n in NAMES])
    assert raw.find(text) == once.find(text) == twice.find(text)
    assert len(raw) == len(once) == len(twice)


def test_find_many_is_find_for_each_text(matcher: DictionaryMatcher) -> None:
    texts = ["breast cancer", "", "ALL and all"]
    assert matcher.find_many(texts) == [matcher.find(t) for t in texts]


@pytest.mark.shared_data
def test_medic_on_ncbi_dev_precision_and_recall(shared_data: Path) -> None:
    """MEDIC 2012 names alone on NCBI disease dev. Measured: exact P 0.665 R 0.637, overlap P 0.902 R 0.863
    (787 gold mentions, 753 found), the whole test under a second. Floors 5 points below."""
    from linker.data import iter_dictionary, iter_pubtator
    from linker.detect.metrics import span_prf

    names = [n for rec in iter_dictionary(shared_data / "medic" / "medic_06Jul2012.txt") for n in rec.all_names()]
    t0 = time.perf_counter()
    matcher = DictionaryMatcher(names)
    assert time.perf_counter() - t0 < 10
    docs = list(iter_pubtator(shared_data / "ncbi-disease" / "NCBIdevelopset_corpus.txt"))
    gold = [[(m.start, m.end) for m in d.mentions] for d in docs]
    predicted = [[(s.start, s.end) for s in spans] for spans in matcher.find_many(d.text for d in docs)]
    exact = span_prf(gold, predicted, "exact")
    overlap = span_prf(gold, predicted, "overlap")
    assert exact["gold"] == 787
    assert exact["precision"] >= 0.61 and exact["recall"] >= 0.58, exact
    assert overlap["precision"] >= 0.85 and overlap["recall"] >= 0.81, overlap
