"""Inter-annotator agreement on hand-computed fixtures: span F1, kappa, Krippendorff's alpha (checked against the
krippendorff package), hierarchy credit on a toy tree, cycles, NIL, empty inputs."""

from __future__ import annotations

import random
import time

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from linker.agreement import (
    NIL,
    ConceptHierarchy,
    Dispute,
    agreement,
    cohen_kappa,
    disputed_concepts,
    krippendorff_alpha,
    link_agreement,
)
from linker.span_agreement import SpanAgreement, span_agreement

# root -> A -> A1, A2; root -> B
TREE = {"A": ["root"], "A1": ["A"], "A2": ["A"], "B": ["root"]}


# --- spans ---------------------------------------------------------------------------------------------------


def test_exact_and_overlap_f1_of_two_span_sets() -> None:
    a = {(0, 5), (10, 20), (30, 40), (50, 55)}
    b = {(0, 5), (12, 25), (35, 38), (60, 70)}
    # exact: (0, 5) only -> F1 = 2 * 1 / (4 + 4) = 0.25
    # overlap: (0, 5) exact, (10, 20)~(12, 25) [8 chars], (30, 40)~(35, 38) [3 chars]; (50, 55) and (60, 70)
    # overlap nothing -> 3 matches, F1 = 2 * 3 / 8 = 0.75
    assert span_agreement(a, b) == SpanAgreement(4, 4, 1, 3, 0.25, 0.75)
    assert span_agreement(b, a) == SpanAgreement(4, 4, 1, 3, 0.25, 0.75)  # symmetric


def test_overlap_matches_are_one_to_one_by_longest_overlap() -> None:
    # (2, 9) overlaps (0, 4) by 2 and (3, 10) by 6: it pairs with (3, 10) and counts once.
    result = span_agreement({(0, 4), (3, 10)}, {(2, 9)})
    assert (result.exact, result.overlap) == (0, 1)
    assert result.overlap_f1 == pytest.approx(2 * 1 / 3)


def test_exact_matches_are_paired_before_overlaps() -> None:
    # (0, 10) is exact in both; the longer (0, 30) of b overlaps (0, 10) of a by as much as (0, 10) of b does,
    # but must not take it: it pairs with (0, 20) -> exact 1, overlap 2 of 2 + 2 spans.
    result = span_agreement({(0, 10), (0, 20)}, {(0, 10), (0, 30)})
    assert (result.exact, result.overlap, result.exact_f1, result.overlap_f1) == (1, 2, 0.5, 1.0)


def test_touching_spans_do_not_overlap_and_documents_are_kept_apart() -> None:
    assert span_agreement({(0, 5)}, {(5, 9)}).overlap == 0  # end offsets are exclusive
    result = span_agreement({("doc1", 0, 5)}, {("doc2", 0, 5), ("doc1", 2, 4)})
    # Only doc1's (2, 4) can match doc1's (0, 5): overlap 1, exact 0; F1 = 2 * 1 / 3.
    assert (result.exact, result.overlap) == (0, 1)
    assert result.overlap_f1 == pytest.approx(2 / 3)


def test_span_f1_of_empty_sets() -> None:
    assert span_agreement(set(), set()) == SpanAgreement(0, 0, 0, 0, None, None)
    assert span_agreement({(0, 3)}, set()) == SpanAgreement(1, 0, 0, 0, 0.0, 0.0)


def test_a_malformed_span_is_named() -> None:
    with pytest.raises(ValueError, match=r"\(start, end\).*\(7,\)"):
        span_agreement({(7,)}, set())  # type: ignore[arg-type]


# --- kappa and observed agreement ----------------------------------------------------------------------------


def test_kappa_of_a_two_by_two_table() -> None:
    #              b: C1   b: C2
    #   a: C1        4       2      (6)
    #   a: C2        1       3      (4)
    #               (5)     (5)     10 items
    # p_o = (4 + 3) / 10 = 0.7; p_e = (6 * 5 + 4 * 5) / 100 = 0.5; kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4
    pairs = [("C1", "C1")] * 4 + [("C2", "C2")] * 3 + [("C1", "C2")] * 2 + [("C2", "C1")]
    assert cohen_kappa(pairs) == pytest.approx(0.4)
    assert cohen_kappa(pairs) == pytest.approx(cohen_kappa_score([a for a, _ in pairs], [b for _, b in pairs]))


def test_kappa_of_systematic_disagreement_is_minus_one() -> None:
    # p_o = 0; p_e = (1 * 1 + 1 * 1) / 4 = 0.5; kappa = (0 - 0.5) / 0.5 = -1
    assert cohen_kappa([("A", "B"), ("B", "A")]) == pytest.approx(-1.0)


def test_kappa_is_undefined_without_items_or_without_variation() -> None:
    assert cohen_kappa([]) is None
    # Both gave every item the same single label: p_e = 1, kappa = 0 / 0.
    assert cohen_kappa([("A", "A")] * 3) is None
    # One label each, but different: p_e = 0, p_o = 0, kappa = 0.
    assert cohen_kappa([("A", "B")] * 3) == 0.0


def test_link_agreement_counts_only_units_both_labelled() -> None:
    a = {"u1": "A", "u2": "B", "u3": NIL}
    b = {"u2": "B", "u3": "C", "u4": "A"}
    # Common units u2 (B, B) and u3 (NIL, C): observed 1/2. a's labels B 1, NIL 1; b's B 1, C 1:
    # p_e * n^2 = 1 (B); kappa = (2 * 1 - 1) / (4 - 1) = 1/3
    result = link_agreement(a, b)
    assert (result.items, result.agreed, result.observed, result.credit) == (2, 1, 0.5, None)
    assert result.kappa == pytest.approx(1 / 3)


def test_link_agreement_with_a_hierarchy_gives_mean_credit() -> None:
    a = {"u1": "A1", "u2": "A1", "u3": "B", "u4": NIL}
    b = {"u1": "A1", "u2": "A", "u3": "A1", "u4": NIL}
    # credits: 1 (same) + 0.8 (parent) + 0.4 (A1 -> A -> root <- B: 3 steps) + 1 (NIL, NIL) = 3.2 over 4
    result = link_agreement(a, b, ConceptHierarchy(TREE))
    assert result.credit == pytest.approx(0.8)
    assert result.observed == 0.5


def test_link_agreement_without_common_units() -> None:
    assert link_agreement({"u1": "A"}, {"u2": "A"}, ConceptHierarchy(TREE)).__dict__ == {
        "items": 0, "agreed": 0, "observed": None, "kappa": None, "credit": None,
    }


# --- Krippendorff's alpha ------------------------------------------------------------------------------------

# Krippendorff (2011) "Computing Krippendorff's alpha-reliability", the 4 coders x 12 units example (also on
# Wikipedia); None is a missing value.
CLASSIC = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]


def _labels(rows: list[list[int | None]]) -> dict[str, dict[int, str]]:
    return {f"coder{i}": {u: str(v) for u, v in enumerate(row) if v is not None} for i, row in enumerate(rows)}


def test_alpha_of_krippendorffs_classic_example() -> None:
    # Unit 12 has one value: not pairable. The other 11 units hold n = 40 values: "1" 9, "2" 13, "3" 10,
    # "4" 5, "5" 3, so sum n_c^2 = 81 + 169 + 100 + 25 + 9 = 384 and n^2 - 384 = 1600 - 384 = 1216.
    # Disagreeing coincidences: unit 2 (2, 2, 3, 2): 2 * 3 * 1 / (4 - 1) = 2; unit 6 (1, 2, 3, 4): 12 / 3 = 4;
    # unit 8 (1, 1, 2, 1): 2 * 3 / 3 = 2; total 8.
    # alpha = 1 - (n - 1) * 8 / 1216 = 1 - 312 / 1216 = 0.743421...
    assert krippendorff_alpha(_labels(CLASSIC)) == pytest.approx(1 - 312 / 1216)
    assert round(krippendorff_alpha(_labels(CLASSIC)) or 0, 3) == 0.743


def test_alpha_of_two_coders_by_hand() -> None:
    labels = {"x": {1: "A", 2: "A", 3: "B", 4: "C"}, "y": {1: "A", 2: "B", 3: "B", 4: "C"}}
    # n = 8: A 3, B 3, C 2 -> n^2 - sum n_c^2 = 64 - 22 = 42. Unit 2 (A, B) disagrees: 2 * 1 * 1 / 1 = 2.
    # alpha = 1 - 7 * 2 / 42 = 2/3
    assert krippendorff_alpha(labels) == pytest.approx(2 / 3)


def test_alpha_is_undefined_without_pairable_values_or_variation() -> None:
    assert krippendorff_alpha({}) is None
    assert krippendorff_alpha({"x": {1: "A", 2: "B"}}) is None  # one annotator
    assert krippendorff_alpha({"x": {1: "A"}, "y": {2: "B"}}) is None  # no unit labelled twice
    assert krippendorff_alpha({"x": {1: "A", 2: "A"}, "y": {1: "A", 2: "A"}}) is None  # a single label
    # B is only on an unpairable unit: the pairable values hold one label (the package would answer nan).
    assert krippendorff_alpha({"x": {1: "A", 2: "B"}, "y": {1: "A"}}) is None


def test_alpha_with_hierarchy_distance_by_hand() -> None:
    labels = {"x": {1: "A1", 2: "A1", 3: "B"}, "y": {1: "A1", 2: "A2", 3: "B"}}
    # n = 6: A1 3, A2 1, B 2; n^2 - sum n_c^2 = 36 - 14 = 22.
    # Nominal: unit 2 (A1, A2) disagrees: 2 -> alpha = 1 - 5 * 2 / 22 = 6/11.
    assert krippendorff_alpha(labels) == pytest.approx(6 / 11)
    # Hierarchy (max_distance 4): siblings A1, A2 earn 0.6 -> distance 0.4; observed 2 * 0.4 = 0.8.
    # Expected: 22 less twice the credited pairs: A1-A2 3 * 1 * 0.6 = 1.8, A1-B (3 steps, 0.4) 3 * 2 * 0.4
    # = 2.4, A2-B 1 * 2 * 0.4 = 0.8; 22 - 2 * 5.0 = 12. alpha = 1 - 5 * 0.8 / 12 = 2/3.
    assert krippendorff_alpha(labels, ConceptHierarchy(TREE)) == pytest.approx(2 / 3)


def _random_team(seed: int, units: int = 40) -> dict[str, dict[int, str]]:
    rng = random.Random(seed)
    choices = ["root", "A", "A1", "A2", "B", NIL, "X"]
    out: dict[str, dict[int, str]] = {}
    for coder in ("x", "y", "z", "w"):
        out[coder] = {u: rng.choice(choices) for u in range(units) if rng.random() < 0.7}
    # Some agreement, so that alpha is not only noise.
    for u in range(0, units, 3):
        for given in out.values():
            if u in given:
                given[u] = "A1"
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_alpha_matches_the_krippendorff_package(seed: int) -> None:
    labels = _random_team(seed)
    hierarchy = ConceptHierarchy(TREE)
    domain = sorted({v for given in labels.values() for v in given.values()})
    code = {label: i for i, label in enumerate(domain)}
    units = sorted({u for given in labels.values() for u in given})
    data = np.array([[code[given[u]] if u in given else np.nan for u in units] for given in labels.values()])
    # The hierarchy's distance as the package's callable metric: values are the integer codes.
    table = np.array([[1.0 - hierarchy.credit(a, b) for b in domain] for a in domain])

    def metric(v1: np.ndarray, v2: np.ndarray, i1: np.ndarray, i2: np.ndarray, n_v: np.ndarray,
               dtype: type[np.floating] = np.float64) -> np.ndarray:
        return table[v1.astype(int), v2.astype(int)].astype(dtype)

    assert krippendorff_alpha(labels) == pytest.approx(krippendorff.alpha(data, level_of_measurement="nominal"))
    assert krippendorff_alpha(labels, hierarchy) == pytest.approx(krippendorff.alpha(
        data, level_of_measurement=metric))  # type: ignore[arg-type]  # the Protocol's generic dtypes


def test_hierarchy_alpha_without_partial_credit_is_nominal_alpha() -> None:
    labels = _random_team(4)
    assert krippendorff_alpha(labels, ConceptHierarchy(TREE, max_distance=0)) == pytest.approx(
        krippendorff_alpha(labels))


# --- hierarchy -----------------------------------------------------------------------------------------------


def test_credit_on_a_toy_tree() -> None:
    h = ConceptHierarchy(TREE)  # credit = 1 - d / 5
    assert h.credit("A1", "A1") == 1.0
    assert (h.distance("A1", "A"), h.credit("A1", "A")) == (1, pytest.approx(0.8))  # parent
    assert (h.distance("A", "A1"), h.credit("A", "A1")) == (1, pytest.approx(0.8))  # child: symmetric
    assert (h.distance("A1", "A2"), h.credit("A1", "A2")) == (2, pytest.approx(0.6))  # siblings
    assert (h.distance("A1", "root"), h.credit("A1", "root")) == (2, pytest.approx(0.6))  # grandparent
    assert (h.distance("A1", "B"), h.credit("A1", "B")) == (3, pytest.approx(0.4))  # uncle: A1 > A > root < B
    tight = ConceptHierarchy(TREE, max_distance=2)  # credit = 1 - d / 3
    assert tight.credit("A1", "A2") == pytest.approx(1 / 3)
    assert (tight.distance("A1", "B"), tight.credit("A1", "B")) == (None, 0.0)  # 3 steps: beyond the cut-off


def test_cousins_earn_the_last_step_of_credit() -> None:
    h = ConceptHierarchy({**TREE, "B1": ["B"]})
    assert (h.distance("A1", "B1"), h.credit("A1", "B1")) == (4, pytest.approx(0.2))  # A1 > A > root < B < B1


def test_nil_and_concepts_outside_the_hierarchy() -> None:
    h = ConceptHierarchy({**TREE, NIL: ["root"]})  # bad data naming NIL gives it no kin
    assert h.credit(NIL, NIL) == 1.0
    assert h.credit(NIL, "A") == 0.0
    assert h.credit("root", NIL) == 0.0
    assert h.credit("X", "X") == 1.0
    assert h.credit("X", "A") == 0.0
    assert h.distance("X", "Y") is None


def test_the_shortest_path_wins_in_a_dag() -> None:
    # Hepatitis C under Liver diseases and Infections; HIV under Infections; Liver diseases under Diseases.
    h = ConceptHierarchy({"HepC": ["Liver", "Infection"], "HIV": ["Infection"], "Liver": ["Disease"],
                          "Infection": ["Disease"]})
    assert h.distance("HepC", "HIV") == 2  # via Infections, not 4 via Diseases
    assert h.distance("HepC", "Liver") == 1
    # Two parents of one child are not kin through the child: only through Diseases (1 + 1).
    assert h.distance("Liver", "Infection") == 2


def test_cycles_in_the_parent_map_terminate() -> None:
    # a > b > c > a, d > a, and a self-loop on e; a huge cut-off, so only the visited set stops the walk.
    h = ConceptHierarchy({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"], "e": ["e"]}, max_distance=10**6)
    assert h.distance("d", "zzz") is None
    assert h.distance("d", "b") == 2  # d > a > b
    assert h.distance("a", "b") == 1  # either way round the cycle
    assert h.distance("e", "a") is None
    assert dict(h.ancestors("d")) == {"d": 0, "a": 1, "b": 2, "c": 3}


def test_related_pairs_agree_with_pairwise_credit() -> None:
    parents = {**TREE, "B1": ["B"], "C": ["root", "B"], "loop1": ["loop2"], "loop2": ["loop1"]}
    labels = ["root", "A", "A1", "A2", "B", "B1", "C", "loop1", "loop2", "X", NIL]
    for cut_off in (0, 1, 2, 4):
        h = ConceptHierarchy(parents, max_distance=cut_off)
        expected = {(a, b): h.credit(a, b) for a in labels for b in labels if a < b and h.credit(a, b) > 0}
        assert h.related(labels) == pytest.approx(expected)


@pytest.mark.parametrize("bad", [-1, 1.5, True, "4"])
def test_a_bad_cut_off_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="max_distance must be a whole number"):
        ConceptHierarchy(TREE, max_distance=bad)  # type: ignore[arg-type]


# --- disputes ------------------------------------------------------------------------------------------------


def test_disputed_concepts_are_unordered_pairs_most_frequent_first() -> None:
    pairs = [("A", "B"), ("B", "A"), ("A", "C"), ("A", "A"), (NIL, "A")]
    # (A, B) twice (either order); (A, C) and (A, NIL) once, ordered by labels; the agreeing pair is ignored.
    assert disputed_concepts(pairs) == [Dispute("A", "B", 2), Dispute("A", "C", 1), Dispute("A", NIL, 1)]
    assert disputed_concepts(pairs, top=1) == [Dispute("A", "B", 2)]
    assert disputed_concepts([]) == []


# --- a team --------------------------------------------------------------------------------------------------


def test_agreement_of_a_team_of_three() -> None:
    labels = {
        "bob": {("d", 0, 5): "A1", ("d", 10, 15): "B", ("d", 20, 25): NIL},
        "dave": {("d", 0, 5): "A1", ("d", 10, 15): "A", ("d", 20, 25): NIL},
        "erin": {("d", 0, 5): "A2", ("d", 10, 15): "B"},
    }
    spans = {
        "bob": {("d", 0, 5), ("d", 10, 15), ("d", 20, 25)},
        "dave": {("d", 0, 5), ("d", 10, 15), ("d", 20, 25)},
        "erin": {("d", 0, 5), ("d", 10, 14), ("d", 30, 35)},  # (10, 14) is a shorter boundary, (30, 35) extra
    }
    report = agreement(labels, spans, ConceptHierarchy(TREE))
    assert report.annotators == ("bob", "dave", "erin")
    assert [(p.a, p.b) for p in report.pairs] == [("bob", "dave"), ("bob", "erin"), ("dave", "erin")]
    bob_dave, bob_erin, dave_erin = report.pairs
    # bob-dave: spans identical (F1 1); labels (A1, A1), (B, A), (NIL, NIL): observed 2/3.
    # a: A1 1, B 1, NIL 1; b: A1 1, A 1, NIL 1 -> p_e * 9 = 2; kappa = (3 * 2 - 2) / (9 - 2) = 4/7.
    # credit (1 + 0.6 [B vs A: siblings under root] + 1) / 3 = 0.8666...
    assert bob_dave.spans is not None and (bob_dave.spans.exact_f1, bob_dave.spans.overlap_f1) == (1.0, 1.0)
    assert bob_dave.links.kappa == pytest.approx(4 / 7)
    assert bob_dave.links.credit == pytest.approx(2.6 / 3)
    # bob-erin: exact (0, 5) only -> 2 * 1 / 6; overlap adds (10, 15)~(10, 14) -> 2 * 2 / 6.
    # labels on the units both labelled: (A1, A2), (B, B): observed 1/2;
    # a: A1 1, B 1; b: A2 1, B 1 -> p_e * 4 = 1; kappa = (2 * 1 - 1) / (4 - 1) = 1/3; credit (0.6 + 1) / 2 = 0.8
    assert bob_erin.spans is not None and bob_erin.spans.exact_f1 == pytest.approx(1 / 3)
    assert bob_erin.spans.overlap_f1 == pytest.approx(2 / 3)
    assert (bob_erin.links.items, bob_erin.links.observed) == (2, 0.5)
    assert bob_erin.links.kappa == pytest.approx(1 / 3)
    assert bob_erin.links.credit == pytest.approx(0.8)
    # dave-erin: labels (A1, A2), (A, B): observed 0; p_e = 0 -> kappa 0; credit (0.6 + 0.6) / 2 = 0.6
    assert (dave_erin.links.observed, dave_erin.links.kappa) == (0.0, 0.0)
    assert dave_erin.links.credit == pytest.approx(0.6)

    assert (report.units, report.pairable_units) == (3, 3)
    # Alpha, nominal: units (A1, A1, A2), (B, A, B), (NIL, NIL). n = 8: A1 2, A2 1, B 2, A 1, NIL 2;
    # n^2 - sum n_c^2 = 64 - (4 + 1 + 4 + 1 + 4) = 50. Disagreement: unit 1 2 * (2 * 1) / 2 = 2, unit 2 the same
    # -> 4. alpha = 1 - 7 * 4 / 50 = 0.44
    assert report.alpha == pytest.approx(0.44)
    # Hierarchy: observed 2 * 0.4 [A1-A2] + 2 * 0.4 [B-A] = 1.6. Credited pairs of labels: A1-A2 0.6 (2 * 1),
    # A1-A 0.8 (2 * 1), A1-B 0.4 (2 * 2), A2-A 0.8 (1 * 1), A2-B 0.4 (1 * 2), A-B 0.6 (1 * 2)
    # = 1.2 + 1.6 + 1.6 + 0.8 + 0.8 + 1.2 = 7.2; expected 50 - 2 * 7.2 = 35.6. alpha = 1 - 7 * 1.6 / 35.6
    assert report.alpha_hierarchy == pytest.approx(1 - 7 * 1.6 / 35.6)
    assert report.mean_kappa == pytest.approx((4 / 7 + 1 / 3 + 0) / 3)
    assert report.mean_observed == pytest.approx((2 / 3 + 1 / 2 + 0) / 3)
    assert report.mean_credit == pytest.approx((2.6 / 3 + 0.8 + 0.6) / 3)
    # Disputes per unit and pair: A1-A2 (bob-erin, dave-erin), A-B (bob-dave, dave-erin).
    assert report.disputes == (Dispute("A", "B", 2), Dispute("A1", "A2", 2))
    summary = report.summary()
    assert summary["alpha"] == report.alpha and summary["pairable_units"] == 3.0
    assert set(summary) == {"alpha", "alpha_hierarchy", "mean_kappa", "mean_observed", "mean_credit",
                            "mean_exact_f1", "mean_overlap_f1", "units", "pairable_units"}


def test_agreement_of_nobody_and_of_a_team_without_spans_or_hierarchy() -> None:
    nobody: dict[str, dict[int, str]] = {}
    empty = agreement(nobody)
    assert (empty.pairs, empty.units, empty.alpha, empty.alpha_hierarchy, empty.disputes) == ((), 0, None, None, ())
    assert all(value is None for key, value in empty.summary().items() if key not in ("units", "pairable_units"))

    report = agreement({"bob": {1: "A"}, "dave": {1: "A", 2: "B"}})
    (pair,) = report.pairs
    assert pair.spans is None and pair.links.credit is None
    assert report.alpha_hierarchy is None and report.mean_exact_f1 is None
    # One common unit with one label: kappa undefined, observed 1.
    assert (pair.links.kappa, pair.links.observed) == (None, 1.0)


def test_an_annotator_who_kept_spans_but_linked_none_is_paired() -> None:
    report = agreement({"bob": {(0, 5): "A"}}, spans={"bob": {(0, 5)}, "dave": {(0, 5)}})
    assert report.annotators == ("bob", "dave")
    (pair,) = report.pairs
    assert pair.spans is not None and pair.spans.exact_f1 == 1.0
    assert pair.links.items == 0


def test_a_few_thousand_units_stay_fast() -> None:
    # 3 annotators x 3,000 units over 800 concepts of a 2,000-concept random tree: the package's dense alpha
    # needed tens of seconds and GiBs for less; the sparse one must take a fraction of that.
    rng = random.Random(7)
    parents = {f"C{i}": [f"C{rng.randrange(i)}"] for i in range(1, 2000)}
    concepts = [f"C{i}" for i in rng.sample(range(2000), 800)] + [NIL]
    gold = {u: rng.choice(concepts) for u in range(3000)}

    def choose(concept: str) -> str:
        roll = rng.random()
        if roll < 0.7:
            return concept
        if roll < 0.85 and concept in parents:
            return parents[concept][0]  # a near miss: the parent
        return rng.choice(concepts)

    labels = {coder: {u: choose(c) for u, c in gold.items() if rng.random() < 0.9} for coder in ("bob", "dave", "erin")}
    started = time.perf_counter()
    report = agreement(labels, hierarchy=ConceptHierarchy(parents))
    assert time.perf_counter() - started < 10
    assert report.alpha is not None and 0.4 < report.alpha < 0.7
    # A parent for the concept is a near miss: the hierarchy forgives part of those disagreements.
    assert report.alpha_hierarchy is not None and report.alpha_hierarchy > report.alpha + 0.05
