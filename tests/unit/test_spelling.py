"""Concept search's edit model (webapp.vocab.spelling): the candidates one edit away and the distance that ranks
trigram candidates."""

from __future__ import annotations

import pytest

from webapp.vocab.spelling import edits1, osa_distance


def test_edits1_holds_each_kind_of_typing_slip_and_not_the_word() -> None:
    near = edits1("optic")
    assert {"otpic", "opic", "optics", "optlc"} <= near  # swap, drop, add, change
    assert "optic" not in near
    assert "topic" not in near  # two edits
    # n deletions, n-1 swaps, 36 n changes (less the n that keep the letter), 36 (n+1) insertions, minus repeats
    assert len(edits1("ab")) == len({*edits1("ab")})


@pytest.mark.parametrize(("a", "b", "distance"), [
    ("optic", "optic", 0),
    ("otpic", "optic", 1),  # a swap of neighbours is one edit (Levenshtein would say 2)
    ("excertion", "excretion", 1),
    ("excertion", "exertion", 1),
    ("carcnioma", "carcinoma", 1),
    ("kitten", "sitting", 3),
    ("", "abc", 3),
    ("ca", "abc", 3),  # optimal string alignment: a swapped pair is not edited again
])
def test_osa_distance(a: str, b: str, distance: int) -> None:
    assert osa_distance(a, b) == distance
    assert osa_distance(b, a) == distance
