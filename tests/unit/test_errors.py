"""Error analysis labels (linker.errors) on a toy hierarchy: exact relations, cycles walked once, counts."""

from __future__ import annotations

import threading

from linker.errors import hierarchy_relation, part_outcomes, summarize

# R -> A, B (siblings); A -> A1 -> A2; X <-> Y a cycle.
PARENTS = {"A": {"R"}, "B": {"R"}, "A1": {"A"}, "A2": {"A1"}, "X": {"Y"}, "Y": {"X"}}


def test_gold_is_labelled_by_its_place_relative_to_the_top_candidate() -> None:
    assert hierarchy_relation("A1", {"A"}, PARENTS) == "parent"
    assert hierarchy_relation("A2", {"A"}, PARENTS) == "ancestor"
    assert hierarchy_relation("A", {"A1"}, PARENTS) == "child"
    assert hierarchy_relation("A", {"A2"}, PARENTS) == "descendant"
    assert hierarchy_relation("A", {"B"}, PARENTS) == "sibling"
    assert hierarchy_relation("A", {"Z"}, PARENTS) == "unrelated"
    assert hierarchy_relation("A2", {"Z", "A1"}, PARENTS) == "parent"  # the closest of several gold ids
    assert hierarchy_relation("A", {"B"}, {}) == "no hierarchy"


def test_a_cycle_in_the_hierarchy_is_walked_once() -> None:
    answers: list[str] = []
    worker = threading.Thread(target=lambda: answers.append(hierarchy_relation("X", {"Q"}, PARENTS)), daemon=True)
    worker.start()
    worker.join(timeout=5)
    assert answers == ["unrelated"]


def test_parts_are_counted_by_seen_string_gold_rank_and_relation() -> None:
    queries = [["asthma"], ["renal failure", "a2 disease"], ["unknown thing"]]
    gold = [[{"A"}], [{"B"}, {"A"}], [{"Z"}]]
    ranked = [[["A", "B"]], [["A", "B"], ["A2", "A1", "C", "D", "A"]], [["A", "B"]]]
    outcomes = part_outcomes(queries, gold, ranked, seen_queries={"asthma", "renal failure"}, parents=PARENTS)
    assert [(o.seen, o.gold_rank, o.relation) for o in outcomes] == [
        (True, 1, "right"), (True, 2, "sibling"), (False, 5, "ancestor"), (False, None, "unrelated")]
    summary = summarize(outcomes)
    assert summary["seen"] == {"right": 1, "wrong": 1}
    assert summary["unseen"] == {"right": 0, "wrong": 2}
    assert summary["unseen_wrong_gold_rank"] == {"2": 0, "3-5": 1, "6+": 0, "absent": 1}
    assert summary["unseen_wrong_relation"] == {"parent": 0, "ancestor": 1, "child": 0, "descendant": 0, "sibling": 0,
                                                "unrelated": 1}
