"""Span precision/recall/F1: exact and overlapping matches counted on hand-made documents."""

from __future__ import annotations

import pytest

from linker.detect.metrics import prf, span_counts, span_prf


def test_exact_needs_the_same_start_and_end() -> None:
    gold = [(0, 5), (10, 20), (30, 40)]
    predicted = [(0, 5), (12, 18), (50, 55)]
    assert span_counts(gold, predicted, "exact") == (1, 3, 3)
    assert span_counts(gold, predicted) == (1, 3, 3)  # exact is the default


def test_overlap_needs_one_shared_character() -> None:
    gold = [(0, 5), (10, 20), (30, 40)]
    assert span_counts(gold, [(0, 5), (12, 18), (50, 55)], "overlap") == (2, 3, 3)
    # Touching is not overlapping: offsets are half-open.
    assert span_counts([(0, 5)], [(5, 10)], "overlap") == (0, 1, 1)
    assert span_counts([(0, 5)], [(4, 10)], "overlap") == (1, 1, 1)


def test_one_long_prediction_covering_two_gold_mentions_counts_once() -> None:
    gold = [(0, 6), (11, 25)]  # "breast" and "ovarian cancer" of "breast and ovarian cancer"
    assert span_counts(gold, [(0, 25)], "overlap") == (1, 1, 2)
    assert span_counts(gold, [(0, 25)], "exact") == (0, 1, 2)
    # A second prediction may still claim the gold mention the long one left.
    assert span_counts(gold, [(0, 25), (11, 25)], "overlap") == (2, 2, 2)
    assert span_counts(gold, [(0, 25), (11, 25)], "exact") == (1, 2, 2)


def test_two_predictions_inside_one_gold_mention_count_once() -> None:
    assert span_counts([(0, 25)], [(0, 6), (11, 25)], "overlap") == (1, 2, 1)


def test_repeated_spans_count_once() -> None:
    assert span_counts([(0, 5), (0, 5)], [(0, 5), (0, 5)], "exact") == (1, 1, 1)


def test_micro_average_over_documents() -> None:
    gold = [[(0, 5)], [(0, 3), (4, 8)]]
    predicted = [[(0, 5)], [(0, 8)]]
    exact = span_prf(gold, predicted, "exact")
    assert (exact["tp"], exact["predicted"], exact["gold"]) == (1, 2, 3)
    assert exact["precision"] == pytest.approx(1 / 2)
    assert exact["recall"] == pytest.approx(1 / 3)
    assert exact["f1"] == pytest.approx(0.4)
    overlap = span_prf(gold, predicted, "overlap")
    assert (overlap["tp"], overlap["precision"], overlap["recall"]) == (2, 1.0, pytest.approx(2 / 3))
    assert overlap["f1"] == pytest.approx(0.8)


def test_nothing_predicted_or_nothing_to_find_is_zero_not_an_error() -> None:
    assert prf(0, 0, 3) == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "tp": 0, "predicted": 0, "gold": 3}
    assert span_prf([[]], [[(0, 1)]])["precision"] == 0.0


def test_bad_mode_and_mismatched_documents_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown matching mode"):
        span_counts([], [], "partial")
    with pytest.raises(ValueError, match="2 gold documents but 1 predicted"):
        span_prf([[], []], [[]])
