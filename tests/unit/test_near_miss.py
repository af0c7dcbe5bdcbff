"""Near-miss labels from a toy parents mapping (no database): siblings, parents, children, a DAG, a cycle."""

from __future__ import annotations

from webapp.curation.near_miss import Kinship, Relation, kinship, near_miss, top_two_notice

# Diseases(1) > Metabolic(2) > Diabetes(3) > {Type 1 (4), Type 2 (5)}; Infections(6) > HIV(7);
# Hepatitis C (8) has two parents, Liver diseases (9) and Infections (6).
PARENTS = {2: [1], 3: [2], 4: [3], 5: [3], 6: [1], 7: [6], 8: [9, 6], 9: [1]}
NAMES = {1: "Diseases", 2: "Metabolic", 3: "Diabetes", 6: "Infections", 9: "Liver diseases", 10: "Viral diseases"}


def name(pk: int) -> str:
    return NAMES[pk]


def test_two_children_of_one_parent_are_siblings_under_it() -> None:
    assert kinship(4, 5, PARENTS) == Kinship(Relation.SIBLING, (3,))


def test_a_direct_parent_and_a_direct_child() -> None:
    assert kinship(3, 5, PARENTS) == Kinship(Relation.PARENT)
    assert kinship(5, 3, PARENTS) == Kinship(Relation.CHILD)


def test_the_same_concept_a_grandparent_and_a_stranger_show_nothing() -> None:
    assert kinship(5, 5, PARENTS).relation is Relation.SAME
    assert kinship(2, 5, PARENTS).relation is Relation.OTHER  # a grandparent: not a near miss
    assert kinship(7, 5, PARENTS).relation is Relation.OTHER
    assert kinship(42, 5, PARENTS).relation is Relation.OTHER  # a concept with no edges at all
    for relation in (Relation.SAME, Relation.OTHER):
        assert near_miss(Kinship(relation), 1, "Type 2", name) is None
        assert top_two_notice(Kinship(relation), 1, 2, 1, name) == ""


def test_in_a_dag_one_shared_parent_of_several_makes_siblings() -> None:
    assert kinship(7, 8, PARENTS) == Kinship(Relation.SIBLING, (6,))
    assert kinship(9, 8, PARENTS) == Kinship(Relation.PARENT)


def test_several_shared_parents_are_all_named_in_the_top_candidates_order() -> None:
    parents = {11: [10, 6, 9], 12: [9, 10]}
    kin = kinship(12, 11, parents)
    assert kin == Kinship(Relation.SIBLING, (10, 9))
    assert top_two_notice(kin, 1, 2, 3, name) == "#1 and #2 are siblings under Viral diseases and Liver diseases."


def test_sibling_comes_before_parent_when_both_hold() -> None:
    # 3 is a parent of 5 and both sit directly under 2 (a redundant edge in a DAG): HiPrBERT's distance 1 wins.
    parents = {5: [3, 2], 3: [2]}
    assert kinship(3, 5, parents) == Kinship(Relation.SIBLING, (2,))


def test_a_cycle_makes_the_candidate_the_parent_and_ends() -> None:
    cycle = {1: [2], 2: [1]}
    assert kinship(2, 1, cycle) == Kinship(Relation.PARENT)
    assert kinship(1, 2, cycle) == Kinship(Relation.PARENT)
    longer = {1: [2], 2: [3], 3: [1]}
    assert kinship(3, 1, longer) == Kinship(Relation.CHILD)
    assert kinship(2, 1, longer) == Kinship(Relation.PARENT)


def test_labels_name_the_top_candidate_by_number_and_explain_in_the_title() -> None:
    sibling = near_miss(kinship(4, 5, PARENTS), 1, "Diabetes Mellitus, Type 2", name)
    assert sibling is not None and sibling.label == "sibling of #1"
    assert sibling.title.startswith("Shares a parent (Diabetes) with #1 (Diabetes Mellitus, Type 2)")
    parent = near_miss(kinship(3, 5, PARENTS), 1, "Type 2", name, " for part 2")
    assert parent is not None and (parent.relation, parent.label) == (Relation.PARENT, "parent of #1")
    assert parent.title == "A parent of #1 for part 2 (Type 2): broader than the top candidate."
    child = near_miss(kinship(5, 3, PARENTS), 1, "Diabetes", name)
    assert child is not None and child.label == "child of #1" and "narrower" in child.title


def test_the_top_two_notice() -> None:
    assert top_two_notice(kinship(4, 5, PARENTS), 1, 2, 1, name) == "#1 and #2 are siblings under Diabetes."
    assert top_two_notice(kinship(3, 5, PARENTS), 1, 2, 1, name) == "#2 is the parent of #1."
    assert top_two_notice(kinship(9, 8, PARENTS), 1, 2, 2, name) == "#2 is a parent of #1."  # #1 has two parents
    assert top_two_notice(kinship(5, 3, PARENTS), 1, 2, 1, name) == "#2 is a child of #1."
