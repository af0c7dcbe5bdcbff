"""McNemar's test and the per-mention outcomes it is computed from (linker.evaluate), on hand-computed values."""

from __future__ import annotations

import math

import pytest

from linker.evaluate import MentionOutcome, evaluate_linking, mcnemar_p, mention_outcomes


def test_no_discordant_pair_is_no_evidence() -> None:
    assert mcnemar_p(0, 0) == 1.0


def test_small_counts_use_the_exact_binomial_test() -> None:
    # b + c = 1: P(X <= 0) = 1/2, doubled: 1.
    assert mcnemar_p(1, 0) == 1.0
    # b + c = 5, all one way: 2 * (1/2)^5 = 0.0625.
    assert mcnemar_p(5, 0) == pytest.approx(0.0625)
    assert mcnemar_p(0, 5) == pytest.approx(0.0625)
    # b + c = 10, b = 2: 2 * (C(10,0) + C(10,1) + C(10,2)) / 2^10 = 2 * 56 / 1024 = 0.109375.
    assert mcnemar_p(2, 8) == pytest.approx(0.109375)
    # b = c: the tail passes 1/2, the p-value is capped at 1.
    assert mcnemar_p(3, 3) == 1.0


def test_large_counts_use_chi_square_with_continuity_correction() -> None:
    # b + c = 40: statistic (|10 - 30| - 1)^2 / 40 = 361 / 40 = 9.025; its chi-square(1) tail is
    # erfc(sqrt(9.025 / 2)) = 0.002663 (tables: chi-square(1) of 9.0 has p = 0.0027).
    assert mcnemar_p(10, 30) == pytest.approx(0.0026635, abs=1e-6)
    assert mcnemar_p(10, 30) == pytest.approx(math.erfc(math.sqrt(9.025 / 2)))
    # Equal counts: no difference, p = 1.
    assert mcnemar_p(20, 20) == 1.0
    # The boundary: 25 discordant pairs are tested by the approximation, 24 exactly.
    assert mcnemar_p(5, 20) == pytest.approx(math.erfc(math.sqrt((15 - 1) ** 2 / 25 / 2)))
    assert mcnemar_p(4, 20) == pytest.approx(2 * sum(math.comb(24, i) for i in range(5)) / 2**24)


def test_negative_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="b=-1"):
        mcnemar_p(-1, 3)


def test_outcomes_give_each_mentions_top1_and_the_rank_where_every_part_is_right() -> None:
    gold = [
        [frozenset({"D1"})],  # right at once
        [frozenset({"D2"})],  # right at rank 3
        [frozenset({"D3"}), frozenset({"D4"})],  # composite: parts right at 1 and 2 -> rank 2
        [frozenset({"D5", "D6"})],  # either id is right; neither retrieved
        [frozenset({"D7"})],  # nothing retrieved at all
    ]
    ranked = [
        [["D1", "D9"]],
        [["D8", "D9", "D2"]],
        [["D3"], ["D9", "D4"]],
        [["D8"]],
        [[]],
    ]
    outcomes = mention_outcomes(gold, ranked)
    assert outcomes == [
        MentionOutcome(("D1",), 1),
        MentionOutcome(("D8",), 3),
        MentionOutcome(("D3", "D9"), 2),
        MentionOutcome(("D8",), None),
        MentionOutcome((None,), None),
    ]
    assert [o.correct for o in outcomes] == [True, False, False, False, False]
    # The same ranks as the aggregate figures count.
    metrics = evaluate_linking(gold, ranked)
    assert metrics["acc@1"] == pytest.approx(sum(o.correct for o in outcomes) / 5)
    assert metrics["mrr"] == pytest.approx((1 + 1 / 3 + 1 / 2) / 5)


def test_outcomes_need_one_ranking_per_mention() -> None:
    with pytest.raises(ValueError, match="2 gold mentions but 1 ranked"):
        mention_outcomes([[frozenset({"A"})], [frozenset({"B"})]], [[["A"]]])
