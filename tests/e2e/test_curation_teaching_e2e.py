"""A curator in Chromium sees what a decision will teach, links a parent with `p` (it teaches nothing) and decides
a mention without teaching with `t`. Screenshots of the panel with the toggle off and on are saved."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.conftest import PASSWORD
from tests.e2e.conftest import login
from webapp.corpus.models import Mention
from webapp.curation.models import Decision
from webapp.vocab.models import Name

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

DECISION_WAIT_MS = 60_000  # a hang guard, not a speed requirement


def _decision(response: Any) -> bool:
    return response.request.method == "POST" and "/decide/" in response.url


def test_the_panel_says_what_a_decision_teaches_and_t_decides_without_teaching(live_server, browser, demo_collection, bob, screenshots) -> None:  # type: ignore[no-untyped-def]
    breast = Mention.objects.get(document__collection=demo_collection, text="breast cancer")
    page = login(browser, live_server.url, "bob", PASSWORD)
    page.goto(f"{live_server.url}/curate/demo/documents/{breast.document_id}/")
    page.locator(f'mark[data-mention-id="{breast.pk}"]').first.click()
    expect(page.locator("#panel .panel-quote")).to_have_text("breast cancer")
    teaching = page.locator("#panel #teaching")
    expect(teaching).to_contain_text("Accept teaches “breast cancer” as a name of Breast Neoplasms.")
    expect(teaching).to_contain_text("a parent (↑, p) teaches nothing")
    expect(page.locator("#panel #teach-off")).to_be_hidden()
    page.locator("#panel").screenshot(path=str(screenshots / "curation-teaching-panel.png"))

    page.keyboard.press("t")  # decide without teaching: the panel says so, the box is ticked
    expect(page.locator("#panel #no-teach")).to_be_checked()
    expect(page.locator("#panel #teach-off")).to_be_visible()
    expect(page.locator("#panel #teach-on")).to_be_hidden()
    page.locator("#panel").screenshot(path=str(screenshots / "curation-teaching-off.png"))
    page.keyboard.press("t")
    expect(page.locator("#panel #no-teach")).not_to_be_checked()

    # The decision's answer is awaited, not timed: a loaded 2-core machine may take longer than expect's 5 s.
    with page.expect_response(_decision, timeout=DECISION_WAIT_MS):
        page.keyboard.press("p")  # the parent of the top candidate: Neoplasms by Site, which learns no name
    # The decision's summary is the page's toast (its answer is already the next open mention's panel).
    expect(page.locator("#toast")).to_contain_text("Taught nothing.", timeout=DECISION_WAIT_MS)
    decision = Decision.objects.get(mention=breast)
    assert (decision.via, decision.concept_ref, decision.teaches) == ("parent", "MESH:D009371", False)
    assert not Name.objects.filter(concept__concept_id="MESH:D009371", text="breast cancer").exists()

    obese = Mention.objects.get(document__collection=demo_collection, text="obese")
    page.goto(f"{live_server.url}/curate/demo/documents/{obese.document_id}/")
    page.locator(f'mark[data-mention-id="{obese.pk}"]').first.click()
    expect(page.locator("#panel .panel-quote")).to_have_text("obese")
    page.keyboard.press("t")
    with page.expect_response(_decision, timeout=DECISION_WAIT_MS):
        page.keyboard.press("2")  # the second candidate, without teaching
    expect(page.locator("#toast")).to_contain_text("Taught nothing.", timeout=DECISION_WAIT_MS)
    untaught = Decision.objects.get(mention=obese)
    assert (untaught.teaches, untaught.synonym) == (False, None)
    assert not Name.objects.filter(text="obese", source=Name.Source.CURATOR).exists()
