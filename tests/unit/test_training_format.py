"""The training pages' figures as their cards write them (issue #46): durations, counts, McNemar's p."""

from __future__ import annotations

from django.template import Context, Template

from webapp.training.comparison import McNemar
from webapp.training.templatetags.training_format import duration


def test_duration_as_the_build_card_writes_it() -> None:
    assert duration(2184.4) == "36 min 24 s"
    assert duration(12) == "12 s"
    assert duration("3900") == "1 h 05 min"
    assert duration(None) == "" and duration("n/a") == ""


def test_counts_and_durations_in_a_template() -> None:
    html = Template('{% load training_format %}{{ n|floatformat:"g" }} names in {{ s|duration }}').render(
        Context({"n": 74431, "s": 2184.4}))
    assert html == "74,431 names in 36 min 24 s"


def test_mcnemar_p_carries_its_relation() -> None:
    small, large = McNemar(shared=40, fixed=9, broken=0, p=0.0001), McNemar(shared=40, fixed=1, broken=1, p=0.5)
    assert f"p {small.p_text}" == "p < 0.001" and f"p {large.p_text}" == "p = 0.500"
