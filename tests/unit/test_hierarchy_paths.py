"""Paths from the roots of a DAG to a concept (no database: the parent map is given)."""

from __future__ import annotations

from webapp.vocab.hierarchy import MAX_PATH_LENGTH, paths_to_roots


def test_a_root_has_the_one_path_of_itself() -> None:
    assert paths_to_roots(1, {}) == ([[1]], False, False)


def test_a_chain_gives_one_path_root_first() -> None:
    assert paths_to_roots(3, {3: [2], 2: [1]}) == ([[1, 2, 3]], False, False)


def test_two_parents_give_two_paths_in_parent_order() -> None:
    # 4 has parents 2 and 3, both under root 1; 3 also under a second root 5.
    parents = {4: [2, 3], 2: [1], 3: [1, 5]}
    assert paths_to_roots(4, parents) == ([[1, 2, 4], [1, 3, 4], [5, 3, 4]], False, False)


def test_a_cycle_ends_the_path_instead_of_looping() -> None:
    assert paths_to_roots(1, {1: [2], 2: [1]}) == ([[2, 1]], False, False)


def test_the_walk_stops_at_the_limit_and_says_so() -> None:
    # A ladder of 10 levels with two parents each has 2**10 paths.
    parents = {n: [n + 10, n + 20] for n in range(10)}
    parents.update({n + 10: [n + 1] for n in range(9)} | {n + 20: [n + 1] for n in range(9)})
    paths, truncated, _ = paths_to_roots(0, parents, limit=5)
    assert len(paths) == 5 and truncated
    assert all(path[-1] == 0 for path in paths)


def test_exactly_limit_paths_is_not_truncated() -> None:
    assert paths_to_roots(3, {3: [1, 2]}, limit=2) == ([[1, 3], [2, 3]], False, False)


def test_a_path_longer_than_the_cap_is_cut_to_the_nearest_ancestors_and_says_so() -> None:
    chain = {n: [n + 1] for n in range(10)}  # 0 -> 1 -> ... -> 10, the root
    assert paths_to_roots(0, chain, max_length=4) == ([[3, 2, 1, 0]], False, True)
    assert paths_to_roots(0, chain, max_length=11) == ([list(range(10, -1, -1))], False, False)


def test_a_chain_deeper_than_pythons_stack_is_walked_without_recursion() -> None:
    chain = {n: [n + 1] for n in range(20_000)}
    paths, truncated, cut = paths_to_roots(0, chain, max_length=30_000)
    assert paths == [list(range(20_000, -1, -1))] and not truncated and not cut
    paths, truncated, cut = paths_to_roots(0, chain)  # the default cap
    assert len(paths) == 1 and len(paths[0]) == MAX_PATH_LENGTH and paths[0][-1] == 0 and cut


def test_the_work_is_bounded_by_the_caps_on_a_wide_deep_ladder() -> None:
    # 2**2000 paths up a ladder 2,000 levels deep: the walk still ends at once, with the count and the length capped.
    parents = {n: [n + 1, -(n + 1)] for n in range(2_000)} | {-n: [n + 1] for n in range(1, 2_000)}
    paths, truncated, cut = paths_to_roots(0, parents, limit=5, max_length=50)
    assert len(paths) == 5 and truncated and cut and all(len(path) == 50 for path in paths)
