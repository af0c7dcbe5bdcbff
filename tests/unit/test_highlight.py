"""Cutting a text into highlight segments: plain, adjacent, nested and partly overlapping mentions."""

from __future__ import annotations

import pytest

from webapp.corpus.highlight import Segment, Span, segment_text

TEXT = "Familial breast cancer and ovarian cancer."


def parts(segments: list[Segment[str]]) -> list[tuple[str, tuple[str, ...]]]:
    return [(s.text, s.covering) for s in segments]


def test_text_without_mentions_is_one_plain_segment() -> None:
    segments = segment_text(TEXT, [])
    assert parts(segments) == [(TEXT, ())]
    assert segments[0].primary is None
    assert not segments[0].is_highlighted


def test_empty_text_has_no_segments() -> None:
    assert segment_text("", []) == []


def test_segments_cover_the_text_exactly_once() -> None:
    spans = [Span(9, 22, "a"), Span(27, 41, "b"), Span(16, 22, "c")]
    segments = segment_text(TEXT, spans)
    assert "".join(s.text for s in segments) == TEXT
    assert [(s.start, s.end) for s in segments] == [(0, 9), (9, 16), (16, 22), (22, 27), (27, 41), (41, 42)]


def test_separate_mentions() -> None:
    segments = segment_text(TEXT, [Span(27, 41, "ovarian"), Span(9, 22, "breast")])
    assert parts(segments) == [
        ("Familial ", ()),
        ("breast cancer", ("breast",)),
        (" and ", ()),
        ("ovarian cancer", ("ovarian",)),
        (".", ()),
    ]
    assert segments[1].starting == ("breast",) and segments[1].ending == ("breast",)


def test_mention_at_the_very_start_and_end() -> None:
    segments = segment_text("fever", [Span(0, 5, "m")])
    assert parts(segments) == [("fever", ("m",))]


def test_adjacent_mentions_stay_separate() -> None:
    segments = segment_text("abcdef", [Span(0, 3, "x"), Span(3, 6, "y")])
    assert parts(segments) == [("abc", ("x",)), ("def", ("y",))]


def test_nested_mention_is_primary_inside_the_outer_one() -> None:
    outer, inner = Span(0, 22, "outer"), Span(9, 22, "inner")
    segments = segment_text(TEXT, [inner, outer])  # input order does not matter
    assert parts(segments)[:2] == [("Familial ", ("outer",)), ("breast cancer", ("outer", "inner"))]
    assert segments[0].starting == ("outer",)
    assert segments[1].primary == "inner"
    assert segments[1].overlaps
    assert segments[1].starting == ("inner",)
    assert segments[1].ending == ("outer", "inner")


def test_partial_overlap_cuts_into_three_segments() -> None:
    # "breast cancer" [9, 22) and "cancer and ovarian" [16, 34)
    segments = segment_text(TEXT, [Span(9, 22, "a"), Span(16, 34, "b")])
    assert parts(segments)[1:4] == [("breast ", ("a",)), ("cancer", ("a", "b")), (" and ovarian", ("b",))]
    assert segments[2].primary == "b"  # the later start wins the shared text
    assert segments[2].ending == ("a",)


def test_identical_spans_keep_input_order() -> None:
    segments = segment_text("fever", [Span(0, 5, "first"), Span(0, 5, "second")])
    assert segments[0].covering == ("first", "second")
    assert segments[0].primary == "second"


def test_same_start_shorter_span_is_inner() -> None:
    segments = segment_text("lung cancer", [Span(0, 4, "lung"), Span(0, 11, "lung cancer")])
    assert parts(segments) == [("lung", ("lung cancer", "lung")), (" cancer", ("lung cancer",))]


def test_markup_in_text_is_kept_as_plain_text() -> None:
    # Escaping is the template's job: the helper must hand over the characters unchanged.
    segments = segment_text("<b>x</b> & y", [Span(3, 4, "m")])
    assert [s.text for s in segments] == ["<b>", "x", "</b> & y"]


@pytest.mark.parametrize("start,end", [(-1, 3), (3, 3), (4, 2), (0, 43)])
def test_invalid_span_raises(start: int, end: int) -> None:
    with pytest.raises(ValueError, match="outside a text of 42"):
        segment_text(TEXT, [Span(start, end, "bad")])


def test_many_mentions_stay_fast() -> None:
    text = "word " * 20_000
    spans = [Span(i * 5, i * 5 + 4, i) for i in range(20_000)]
    segments = segment_text(text, spans)
    assert len([s for s in segments if s.is_highlighted]) == 20_000


def test_extra_cuts_split_plain_and_highlighted_text() -> None:
    segments = segment_text("Title. Body text", [Span(0, 5, "t")], cuts=[6, 7])
    assert [(s.text, s.covering) for s in segments] == [("Title", ("t",)), (".", ()), (" ", ()), ("Body text", ())]


def test_cut_outside_the_text_raises() -> None:
    with pytest.raises(ValueError, match="cuts"):
        segment_text("abc", [], cuts=[4])
