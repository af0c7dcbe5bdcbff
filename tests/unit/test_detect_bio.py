"""BIO labels on words: exact offsets, spans expanded to whole words, lenient I-, round trips, Unicode."""

from __future__ import annotations

import pytest

from linker.data import GoldMention
from linker.detect.bio import from_bio, to_bio, words
from linker.detect.spans import TAGGER, Span

TEXT = "Hereditary breast cancer (HBC) and type-2 diabetes."


def test_words_split_punctuation_off_with_exact_offsets() -> None:
    w = words(TEXT)
    assert [TEXT[s:e] for s, e in w] == ["Hereditary", "breast", "cancer", "(", "HBC", ")", "and", "type", "-", "2",
                                         "diabetes", "."]
    assert w[0] == (0, 10)
    assert w[-1] == (50, 51)


def test_to_bio_labels_words_of_each_span() -> None:
    w = words(TEXT)
    labels = to_bio(w, [(11, 24), (26, 29), (35, 50)])
    assert labels == ["O", "B", "I", "O", "B", "O", "O", "B", "I", "I", "I", "O"]


def test_span_edges_inside_a_word_expand_to_the_whole_word() -> None:
    text = "breast cancers are common"
    w = words(text)
    # "breast cancer" of "breast cancers", and "east" inside "breast": both cover whole words when labelled.
    assert to_bio(w, [(0, 13)]) == ["B", "I", "O", "O"]
    assert from_bio(text, w, to_bio(w, [(0, 13)])) == [Span(0, 14, "breast cancers", TAGGER, 1.0)]
    assert to_bio(w, [(2, 6)]) == ["B", "O", "O", "O"]


def test_spans_of_any_kind_and_overlaps_keep_the_first() -> None:
    w = words(TEXT)
    gold = GoldMention(11, 24, "breast cancer", "Disease", "D001943", (("D001943",),))
    assert to_bio(w, [gold]) == to_bio(w, [Span(11, 24, "breast cancer")]) == to_bio(w, [(11, 24)])
    # "breast cancer" and the overlapping "cancer (HBC)": the one starting first is labelled, the other dropped.
    assert to_bio(w, [(18, 30), (11, 24)]) == ["O", "B", "I", "O", "O", "O", "O", "O", "O", "O", "O", "O"]
    # A span over spaces only labels nothing.
    assert to_bio(words("a  b"), [(1, 3)]) == ["O", "O"]


def test_adjacent_spans_stay_apart() -> None:
    text = "HBC HNPCC"
    w = words(text)
    labels = to_bio(w, [(0, 3), (4, 9)])
    assert labels == ["B", "B"]
    assert [(s.start, s.end) for s in from_bio(text, w, labels)] == [(0, 3), (4, 9)]


def test_inside_without_begin_starts_a_span() -> None:
    text = "the breast cancer gene"
    w = words(text)
    assert from_bio(text, w, ["O", "I", "I", "O"]) == [Span(4, 17, "breast cancer", TAGGER, 1.0)]
    assert [s.text for s in from_bio(text, w, ["I", "O", "I", "O"])] == ["the", "cancer"]


def test_typed_labels_and_scores() -> None:
    text = "the breast cancer gene"
    w = words(text)
    spans = from_bio(text, w, ["O", "B-Disease", "I-Disease", "I-Gene"], [1.0, 0.9, 0.7, 0.5])
    assert [(s.text, s.source) for s in spans] == [("breast cancer", "tagger"), ("gene", "tagger")]
    assert spans[0].score == pytest.approx(0.8)
    assert spans[1].score == pytest.approx(0.5)


def test_round_trip_of_word_aligned_spans() -> None:
    w = words(TEXT)
    spans = [(11, 24), (26, 29), (35, 50)]
    back = from_bio(TEXT, w, to_bio(w, spans))
    assert [(s.start, s.end) for s in back] == spans
    assert all(TEXT[s.start : s.end] == s.text for s in back)


def test_unicode_offsets_are_characters_of_the_text() -> None:
    # A decomposed "é" (e + combining acute), Greek letters, a non-breaking space, an emoji, a CJK word.
    text = "Syndrome de Be\u0301hc\u0327et\u00a0and TGF-\u03b2 \U0001f600 \u7cd6\u5c3f\u75c5."
    w = words(text)
    assert [text[s:e] for s, e in w] == ["Syndrome", "de", "Be\u0301hc\u0327et", "and", "TGF", "-", "\u03b2",
                                         "\U0001f600", "\u7cd6\u5c3f\u75c5", "."]
    spans = [(0, text.index("\u00a0")), (text.index("TGF"), text.index("\u03b2") + 1), (text.index("\u7cd6"), len(text) - 1)]
    back = from_bio(text, w, to_bio(w, spans))
    assert [(s.start, s.end) for s in back] == spans
    assert [s.text for s in back] == ["Syndrome de Be\u0301hc\u0327et", "TGF-\u03b2", "\u7cd6\u5c3f\u75c5"]


def test_errors_name_the_mismatch() -> None:
    with pytest.raises(ValueError, match="2 labels for 3 words"):
        from_bio("a b c", words("a b c"), ["O", "O"])
    with pytest.raises(ValueError, match="unknown BIO label"):
        from_bio("a", words("a"), ["X"])
    assert from_bio("", [], []) == []
