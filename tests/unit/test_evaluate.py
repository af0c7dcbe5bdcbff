"""Metrics computed by hand, including BioSyn's composite rule."""

from __future__ import annotations

import math

import pytest

from linker.evaluate import (
    PRIMARY_METRIC,
    evaluate_linking,
    mean_average_precision,
    mention_rank,
    roc_auc,
    spearman,
)

A, B, C, D = "A", "B", "C", "D"


def test_primary_metric_is_acc_at_1() -> None:
    assert PRIMARY_METRIC == "acc@1"


def test_single_part_mentions() -> None:
    gold = [[frozenset({A})], [frozenset({B})], [frozenset({C, D})], [frozenset({A})]]
    ranked = [[[A, B]], [[A, C, D, A, B]], [[D]], [[B, C]]]
    m = evaluate_linking(gold, ranked)
    # ranks: 1, 5, 1, never
    assert m["acc@1"] == pytest.approx(2 / 4)
    assert m["acc@5"] == pytest.approx(3 / 4)
    assert m["mrr"] == pytest.approx((1 + 1 / 5 + 1 + 0) / 4)
    assert m["n"] == 4


def test_composite_is_correct_only_when_every_part_is() -> None:
    gold = [[frozenset({A}), frozenset({B})]]
    assert evaluate_linking(gold, [[[A], [B]]])["acc@1"] == 1.0
    assert evaluate_linking(gold, [[[A], [C, B]]])["acc@1"] == 0.0
    m = evaluate_linking(gold, [[[A], [C, B]]])
    assert m["acc@5"] == 1.0
    assert m["mrr"] == pytest.approx(0.5)  # min over parts of 1/rank
    assert evaluate_linking(gold, [[[A], [C]]])["acc@5"] == 0.0


def test_mention_rank() -> None:
    assert mention_rank([frozenset({A}), frozenset({B})], [[C, A], [B]]) == 2
    assert math.isinf(mention_rank([frozenset({A})], [[B]]))
    with pytest.raises(ValueError):
        mention_rank([frozenset({A})], [[A], [A]])


def test_per_type_metrics() -> None:
    gold = [[frozenset({A})], [frozenset({B})], [frozenset({C})]]
    ranked = [[[A]], [[A]], [[C]]]
    m = evaluate_linking(gold, ranked, ["SpecificDisease", "Modifier", "SpecificDisease"], ks=(1,))
    assert m["acc@1/SpecificDisease"] == 1.0
    assert m["acc@1/Modifier"] == 0.0
    assert m["n/SpecificDisease"] == 2
    assert "acc@5" not in m


def test_mismatched_lengths_raise() -> None:
    with pytest.raises(ValueError):
        evaluate_linking([[frozenset({A})]], [])


def test_mean_average_precision() -> None:
    # q1: relevant at 1 and 3 -> (1 + 2/3) / 2 ; q2: relevant at 2, 2 relevant exist -> (1/2) / 2
    relevance = [[True, False, True], [False, True, False]]
    assert mean_average_precision(relevance) == pytest.approx(((1 + 2 / 3) / 2 + 0.5) / 2)
    assert mean_average_precision(relevance, [2, 2]) == pytest.approx(((1 + 2 / 3) / 2 + 0.25) / 2)
    assert mean_average_precision([[False]]) == 0.0


def test_spearman() -> None:
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3]))


def test_roc_auc() -> None:
    assert roc_auc([0, 0, 1, 1], [0.1, 0.2, 0.8, 0.9]) == pytest.approx(1.0)
    # pairs (pos, neg): (0.5 vs 0.4) win, (0.5 vs 0.6) loss, (0.7 vs both) win -> 3/4
    assert roc_auc([0, 1, 0, 1], [0.4, 0.5, 0.6, 0.7]) == pytest.approx(0.75)
    assert roc_auc([0, 1], [0.5, 0.5]) == pytest.approx(0.5)
    assert math.isnan(roc_auc([1, 1], [0.1, 0.2]))
