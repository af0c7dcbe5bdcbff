"""linker.memo: bounded, least recently used out first; values computed once per key, the missing ones together."""

from __future__ import annotations

import numpy as np

from linker.memo import Memo, QueryMemo


def test_the_least_recently_used_entry_goes_first() -> None:
    memo: Memo[str, int] = Memo(size=2)
    memo.put("a", 1)
    memo.put("b", 2)
    assert memo.get("a") == 1  # "b" is now the least recently used
    memo.put("c", 3)
    assert memo.get("b") is None and memo.get("a") == 1 and memo.get("c") == 3 and len(memo) == 2


def test_only_the_missing_keys_are_computed_together_in_order() -> None:
    memo: Memo[str, int] = Memo()
    memo.put("b", 20)
    asked: list[list[int]] = []

    def compute(at: list[int]) -> list[int]:
        asked.append(at)
        return [len(keys[i]) for i in at]

    keys = ["aaa", "b", "cc"]
    assert memo.many(keys, compute) == [3, 20, 2]
    assert asked == [[0, 2]]
    assert memo.many(keys, compute) == [3, 20, 2] and len(asked) == 1


def test_query_memo_keeps_top_lists_per_length() -> None:
    memo = QueryMemo()
    calls: list[int] = []

    def search(m: int):  # type: ignore[no-untyped-def]
        def run(at: list[int]) -> tuple[np.ndarray, np.ndarray]:
            calls.append(m)
            return np.ones((len(at), m), dtype=np.float32), np.tile(np.arange(m), (len(at), 1))
        return run

    scores, rows = memo.top(1, ["x", "y"], 3, search(3))
    assert scores.shape == rows.shape == (2, 3)
    memo.top(1, ["x", "y"], 3, search(3))
    memo.top(1, ["x"], 4, search(4))  # another length is another list (a tie at the cut may fall otherwise)
    assert calls == [3, 4]
