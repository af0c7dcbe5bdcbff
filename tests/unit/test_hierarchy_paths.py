"""Paths from the roots of a DAG to a concept (no database: the parent map is given)."""

from __future__ import annotations

from webapp.vocab.hierarchy import paths_to_roots


def test_a_root_has_the_one_path_of_itself() -> None:
    assert paths_to_roots(1, {}) == ([[1]], False)


def test_a_chain_gives_one_path_root_first() -> None:
    assert paths_to_roots(3, {3: [2], 2: [1]}) == ([[1, 2, 3]], False)


def test_two_parents_give_two_paths_in_parent_order() -> None:
    # 4 has parents 2 and 3, both under root 1; 3 also under a second root 5.
    parents = {4: [2, 3], 2: [1], 3: [1, 5]}
    assert paths_to_roots(4, parents) == ([[1, 2, 4], [1, 3, 4], [5, 3, 4]], False)


def test_a_cycle_ends_the_path_instead_of_looping() -> None:
    assert paths_to_roots(1, {1: [2], 2: [1]}) == ([[2, 1]], False)


def test_the_walk_stops_at_the_limit_and_says_so() -> None:
    # A ladder of 10 levels with two parents each has 2**10 paths.
    parents = {n: [n + 10, n + 20] for n in range(10)}
    parents.update({n + 10: [n + 1] for n in range(9)} | {n + 20: [n + 1] for n in range(9)})
    paths, truncated = paths_to_roots(0, parents, limit=5)
    assert len(paths) == 5 and truncated
    assert all(path[-1] == 0 for path in paths)


def test_exactly_limit_paths_is_not_truncated() -> None:
    assert paths_to_roots(3, {3: [1, 2]}, limit=2) == ([[1, 3], [2, 3]], False)
