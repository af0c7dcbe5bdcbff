"""A keyboard decision moves on to the next open mention with one request (issue #46, bench/curator_speed.py): the
decision's answer is the next mention's panel, so no panel GET follows it; the next mention is selected, focused and
named in the address, and the decided one is recoloured. With auto-advance off, the decided mention's panel stays.
Enter in the search box links the first hit as soon as the hits are in (htmx wires them at once, not at the settle)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.conftest import PASSWORD
from tests.e2e.conftest import login
from webapp.corpus.models import Document, Mention
from webapp.curation.models import Decision

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_a_decision_answers_with_the_next_panel(live_server, browser, demo_collection, bob) -> None:  # type: ignore[no-untyped-def]
    doc = Document.objects.get(collection=demo_collection, external_id="demo-1")
    first = Mention.objects.get(document=doc, text="Type 2 diabetes")
    second = Mention.objects.get(document=doc, text="hypertension")
    page = login(browser, live_server.url, "bob", PASSWORD)
    page.goto(f"{live_server.url}/curate/demo/documents/{doc.pk}/")
    quote = page.locator("#panel .panel-quote")
    expect(quote).to_have_text("Type 2 diabetes")
    requests: list[str] = []
    page.on("request", lambda r: requests.append(f"{r.method} {r.url}") if "/curate/mentions/" in r.url else None)

    page.keyboard.press("a")
    expect(quote).to_have_text("hypertension")
    expect(page.locator("#toast")).to_contain_text("Type 2 diabetes")
    page.wait_for_timeout(300)  # a panel GET, if one were still coming, would be sent by now
    assert [r.split("?")[0].replace(live_server.url, "") for r in requests] == [f"POST /curate/mentions/{first.pk}/decide/"]
    expect(page.locator(f"#mention-{second.pk}")).to_be_focused()
    expect(page.locator(f"#mention-{first.pk}")).to_have_attribute("data-status", "accepted")
    assert f"m={second.pk}" in page.url

    # The next key decides the mention now shown (the panel is wired at once).
    page.keyboard.press("n")
    expect(quote).not_to_have_text("hypertension")
    second.refresh_from_db()
    assert second.status == Mention.Status.NIL

    # Auto-advance off: the decided mention's panel stays, with its message.
    page.locator("#auto-advance").uncheck()  # the keys still reach the page from the box
    shown = quote.inner_text()
    page.keyboard.press("x")
    expect(page.locator("#panel .alert-success")).to_contain_text("Rejected")
    expect(quote).to_have_text(shown)


def test_enter_links_the_first_hit_as_soon_as_it_is_in(live_server, browser, demo_collection, bob) -> None:  # type: ignore[no-untyped-def]
    doc = Document.objects.get(collection=demo_collection, external_id="demo-1")
    obese = Mention.objects.get(document=doc, text="obese")
    page = login(browser, live_server.url, "bob", PASSWORD)
    page.goto(f"{live_server.url}/curate/demo/documents/{doc.pk}/?m={obese.pk}")
    expect(page.locator("#panel .panel-quote")).to_have_text("obese")
    # Enter in the very task that swaps the hits in: before htmx's settle (20 ms) would have wired them.
    page.evaluate("""() => document.body.addEventListener("htmx:afterSwap", (e) => {
        if (e.detail.target.id !== "search-results" || !e.detail.xhr.responseURL.includes("q=obesity")) return;
        document.getElementById("concept-search").dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true }));
    })""")
    page.keyboard.press("/")
    page.keyboard.type("obesity")
    expect(page.locator("#toast")).to_contain_text("MESH:D009765")
    decision = Decision.objects.get(mention=obese)
    assert (decision.via, decision.concept.concept_id) == ("search", "MESH:D009765")
