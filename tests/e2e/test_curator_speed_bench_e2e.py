"""bench/curator_speed.py's scripted curator, on 5 mentions of the demo collection against the test server: it reads
the panel, decides by the gold with the keyboard and measures each decision (keys, wait, the requests and their
server time), one request per decision. A smoke test of the bench (no timing is asserted)."""

from __future__ import annotations

import importlib

import pytest
from django.urls import reverse

from tests.conftest import PASSWORD
from tests.e2e.conftest import login
from webapp.corpus.models import Document

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

bench = importlib.import_module("bench.curator_speed")


def test_the_scripted_curator_makes_and_measures_five_decisions(live_server, browser, demo_collection, bob) -> None:  # type: ignore[no-untyped-def]
    gold, _set_aside = bench.usable_gold(demo_collection.pk)
    first = Document.objects.filter(collection=demo_collection).order_by("pk").first()
    page = login(browser, live_server.url, "bob", PASSWORD)
    run = bench.curate(page, live_server.url, reverse("curation:document", args=["demo", first.pk]), gold, 5)
    found = bench.figures(run)
    assert found["decisions"] == 5 and sum(found["kinds"].values()) == 5
    assert all(d.keys >= 1 and d.wait_ms > 0 and d.server_ms > 0 for d in run.decisions)
    assert found["requests_per_decision"].get("panel", 0) == 0 and found["requests_per_decision"]["decide"] == 1.0
