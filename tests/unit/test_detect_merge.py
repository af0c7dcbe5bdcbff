"""Merging the matcher's and the tagger's spans: each rule on one hand-made text, exact expected lists."""

from __future__ import annotations

import itertools

import pytest

from linker.detect.merge import RULES, merge
from linker.detect.spans import Span

TEXT = "renal hamartomas and breast cancer in ALL patients with liver injury or heart valve tumor, and lupus"


def at(piece: str, source: str, score: float = 1.0) -> Span:
    start = TEXT.index(piece)
    return Span(start, start + len(piece), piece, source, score)


# The tagger knows the corpus's boundaries ("renal hamartomas"), the matcher knows "ALL" and "liver injury";
# both found "breast cancer"; "heart valve" and "valve tumor" are a tie of length; "lupus" only the tagger has.
TAGGER = [
    at("renal hamartomas", "tagger", 0.9),
    at("breast cancer", "tagger", 0.8),
    at("injury", "tagger", 0.6),
    at("heart valve", "tagger", 0.7),
    at("lupus", "tagger", 0.5),
]
MATCHER = [
    at("hamartomas", "matcher"),
    at("breast cancer", "matcher"),
    at("ALL", "matcher"),
    at("liver injury", "matcher"),
    at("valve tumor", "matcher"),
]


def test_tagger_first_keeps_every_tagger_span_and_fills_in_from_the_matcher() -> None:
    assert merge(MATCHER, TAGGER) == merge(MATCHER, TAGGER, "tagger-first") == [
        at("renal hamartomas", "tagger", 0.9),
        at("breast cancer", "both", 0.8),
        at("ALL", "matcher"),
        at("injury", "tagger", 0.6),
        at("heart valve", "tagger", 0.7),
        at("lupus", "tagger", 0.5),
    ]


def test_a_feature_reading_tagger_keeps_matcher_spans_of_names_it_knew_only_where_it_found_them() -> None:
    # The tagger read "breast cancer" and "ALL" as dictionary features and decided against "ALL" here;
    # "liver injury" is a name added since (new to it), so the dictionary still fills it in where it is free.
    knows = {"breast cancer", "ALL", "hamartomas"}.__contains__
    assert merge(MATCHER, TAGGER, "tagger-first", tagger_knows=knows) == [
        at("renal hamartomas", "tagger", 0.9),
        at("breast cancer", "both", 0.8),
        at("injury", "tagger", 0.6),
        at("heart valve", "tagger", 0.7),
        at("lupus", "tagger", 0.5),
    ]
    free = "liver injury in ALL"
    matched = [Span(0, 12, "liver injury", "matcher"), Span(16, 19, "ALL", "matcher")]
    assert merge(matched, [], "tagger-first", tagger_knows=knows) == [Span(0, 12, "liver injury", "matcher")]
    assert free[0:12] == "liver injury"


def test_matcher_first_is_the_mirror_image() -> None:
    assert merge(MATCHER, TAGGER, "matcher-first") == [
        at("hamartomas", "matcher"),
        at("breast cancer", "both", 0.8),
        at("ALL", "matcher"),
        at("liver injury", "matcher"),
        at("valve tumor", "matcher"),
        at("lupus", "tagger", 0.5),
    ]


def test_union_longest_keeps_the_longer_and_the_tagger_on_a_tie() -> None:
    assert merge(MATCHER, TAGGER, "union-longest") == [
        at("renal hamartomas", "tagger", 0.9),
        at("breast cancer", "both", 0.8),
        at("ALL", "matcher"),
        at("liver injury", "matcher"),
        at("heart valve", "tagger", 0.7),
        at("lupus", "tagger", 0.5),
    ]


def test_one_long_span_against_two_short_ones() -> None:
    text = "breast and ovarian cancer"
    long = Span(0, 25, text, "matcher", 1.0)
    parts = [Span(0, 6, "breast", "tagger", 0.9), Span(11, 25, "ovarian cancer", "tagger", 0.8)]
    assert merge([long], parts, "tagger-first") == parts
    assert merge([long], parts, "matcher-first") == [long]
    assert merge([long], parts, "union-longest") == [long]


@pytest.mark.parametrize("rule", RULES)
def test_every_rule_output_is_sorted_and_never_overlaps(rule: str) -> None:
    out = merge(list(reversed(MATCHER)), list(reversed(TAGGER)), rule)
    assert out == sorted(out, key=lambda s: (s.start, s.end))
    assert all(a.end <= b.start for a, b in itertools.pairwise(out))
    assert all(TEXT[s.start : s.end] == s.text for s in out)


@pytest.mark.parametrize("rule", RULES)
def test_one_side_empty_gives_the_other_side(rule: str) -> None:
    assert merge([], TAGGER, rule) == TAGGER
    assert merge(MATCHER, [], rule) == MATCHER
    assert merge([], [], rule) == []


def test_unknown_rule_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match="tagger-first, matcher-first, union-longest"):
        merge(MATCHER, TAGGER, "longest")
