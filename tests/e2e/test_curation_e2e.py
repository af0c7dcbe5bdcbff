"""A curator in Chromium: keyboard selection, the second candidate, concept search, undo, NIL; and two curators
deciding the same mention at once. Screenshots of the document view and the candidate panel are saved."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.conftest import PASSWORD
from tests.e2e.conftest import login, select_text
from webapp.corpus.models import Document, Link, Mention
from webapp.curation.models import Decision, HardNegative
from webapp.linking.registry import get_active_linker
from webapp.vocab.models import Name

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _quote(page):  # type: ignore[no-untyped-def]
    return page.locator("#panel .panel-quote")


def test_a_curator_decides_with_the_keyboard_and_the_linker_learns(live_server, browser, demo_collection, bob, screenshots) -> None:  # type: ignore[no-untyped-def]
    doc = Document.objects.get(collection=demo_collection, external_id="demo-1")
    obese = Mention.objects.get(document=doc, text="obese")
    linker = get_active_linker("medic-demo").linker
    before = [c for c in linker.link_mentions(["Type 2 diabetes"], k=10)[0] if c.concept_id == "MESH:D003922"]
    assert before and before[0].name != "Type 2 diabetes"

    page = login(browser, live_server.url, "bob", PASSWORD)
    page.goto(f"{live_server.url}/curate/demo/documents/{doc.pk}/")
    expect(_quote(page)).to_have_text("Type 2 diabetes")  # the first open mention is selected
    page.keyboard.press("j")
    expect(_quote(page)).to_have_text("hypertension")
    page.keyboard.press("k")
    expect(_quote(page)).to_have_text("Type 2 diabetes")
    expect(page.locator("#panel .candidate")).to_have_count(10)
    expect(page.locator('#panel .candidate[data-number="2"]')).to_have_attribute("data-concept-id", "MESH:D003922")
    # Type 1 and Type 2 diabetes are siblings: a near miss, tagged on #2 and noted above the list.
    expect(page.locator('#panel .candidate[data-number="2"] .near-miss')).to_have_text("sibling of #1")
    expect(page.locator("#panel .near-miss-note")).to_contain_text("#1 and #2 are siblings under Diabetes Mellitus")
    page.wait_for_timeout(300)
    page.screenshot(path=str(screenshots / "curation-document-view.png"), full_page=True)
    # On a 1440x900 screen, as the page opens, at least five candidates are wholly in view, each with its types
    # and path on one line.
    page.set_viewport_size({"width": 1440, "height": 900})
    page.wait_for_timeout(200)
    page.screenshot(path=str(screenshots / "curation-1440x900.png"))
    in_view = page.evaluate("""() => [...document.querySelectorAll('#panel .candidate')]
        .filter((li) => { const r = li.getBoundingClientRect(); return r.top >= 0 && r.bottom <= window.innerHeight; }).length""")
    assert in_view >= 5, f"{in_view} candidates in view on a 1440x900 screen"
    line = page.locator('#panel .candidate[data-number="4"] .cand-family summary')
    assert line.evaluate("(el) => el.getBoundingClientRect().height") < 26  # one line: types | path
    expect(line).to_contain_text("Metabolic disease")
    page.set_viewport_size({"width": 1440, "height": 2600})  # the sticky panel shows all ten candidates
    page.locator("#panel").screenshot(path=str(screenshots / "curation-candidate-panel.png"))
    page.set_viewport_size({"width": 1440, "height": 1000})

    # 2: the second candidate. The page then moves on to the next open mention by itself.
    page.keyboard.press("2")
    expect(page.locator("#toast")).to_contain_text("rank 2")
    expect(_quote(page)).to_have_text("hypertension")

    # Search any concept for "obese" and link it (/ then type, ArrowDown, Enter).
    page.locator(f"#mention-{obese.pk}").click()
    expect(_quote(page)).to_have_text("obese")
    page.keyboard.press("/")
    page.keyboard.type("obesity")
    expect(page.locator("#search-results .search-hit").first).to_contain_text("MESH:D009765")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    expect(page.locator("#toast")).to_contain_text("MESH:D009765")

    # u: undo the last decision (the search link), then n: NIL for the same mention.
    page.keyboard.press("u")
    expect(page.locator("#panel .alert-success")).to_contain_text("Undone")
    expect(page.locator("#panel")).not_to_contain_text("was undone")  # said once, not three times
    expect(page.locator("#toast")).not_to_contain_text("Undone")
    expect(_quote(page)).to_have_text("obese")
    expect(page.locator("#panel-status")).to_have_text("Suggested by the model")
    page.keyboard.press("n")
    expect(page.locator("#toast")).to_contain_text("NIL")
    expect(page.locator(f"#mention-{obese.pk}")).to_have_attribute("data-status", "nil")
    page.screenshot(path=str(screenshots / "curation-document-after-decisions.png"), full_page=True)

    t2d = Mention.objects.get(document=doc, text="Type 2 diabetes")
    assert t2d.status == Mention.Status.RELINKED
    relink = Decision.objects.get(mention=t2d)
    assert (relink.action, relink.via, relink.rank, relink.concept_ref, relink.user) == ("relink", "candidate", 2, "MESH:D003922", bob)
    assert relink.model_version == get_active_linker("medic-demo").label
    assert relink.time_on_task_ms is not None and relink.time_on_task_ms > 0
    assert HardNegative.objects.filter(decision=relink).values_list("concept__concept_id", flat=True).get() == "MESH:D003924"

    obese.refresh_from_db()
    assert obese.status == Mention.Status.NIL
    searched, nil = Decision.objects.filter(mention=obese).order_by("created_at")
    # Obesity is the model's own top suggestion for "obese": found through search, it is an accept.
    assert (searched.action, searched.via, searched.concept_ref, searched.undone_by) == ("accept", "search", "MESH:D009765", bob)
    assert searched.undone_at is not None and nil.action == "nil" and nil.undone_at is None
    assert list(Link.objects.filter(mention=obese, origin="curator").values_list("nil", flat=True)) == [True]
    assert not Name.objects.filter(text="obese").exists()  # the undone link's synonym is gone

    synonym = Name.objects.get(text="Type 2 diabetes", concept__concept_id="MESH:D003922")
    assert (synonym.source, synonym.created_by) == ("curator", bob)
    linker = get_active_linker("medic-demo").linker  # a linker handed out is a snapshot: asked again
    after = linker.link_mentions(["Type 2 diabetes"], k=10)[0]
    learned = [c for c in after if c.concept_id == "MESH:D003922"]
    assert learned and learned[0].name == "Type 2 diabetes"
    assert learned[0].score == pytest.approx(after[0].score)  # an exact match now, level with the top


def test_two_curators_on_one_mention_the_second_sees_a_conflict_and_nothing_is_lost(live_server, browser, demo_collection, alice, bob, screenshots) -> None:  # type: ignore[no-untyped-def]
    doc = Document.objects.get(collection=demo_collection, external_id="demo-1")
    hypertension = Mention.objects.get(document=doc, text="hypertension")
    url = f"{live_server.url}/curate/demo/documents/{doc.pk}/?m={hypertension.pk}"
    pages = {}
    for name in ("alice", "bob"):
        pages[name] = login(browser, live_server.url, name, PASSWORD)
        pages[name].goto(url)
        expect(_quote(pages[name])).to_have_text("hypertension")
        pages[name].wait_for_timeout(200)
    for page in pages.values():  # both look at the same version (the panel stored its suggestions once)
        page.locator("#auto-advance").uncheck()
    pages["alice"].reload()
    expect(_quote(pages["alice"])).to_have_text("hypertension")
    pages["alice"].locator("#auto-advance").uncheck()

    pages["bob"].keyboard.press("a")
    expect(pages["bob"].locator("#toast")).to_contain_text("Accepted")
    pages["alice"].keyboard.press("n")
    conflict = pages["alice"].locator("#panel .alert-conflict")
    expect(conflict).to_be_visible()
    expect(conflict).to_contain_text("bob accepted the suggestion for this mention")
    expect(conflict).to_contain_text("Your decision was not saved")
    expect(pages["alice"].locator("#panel-status")).to_have_text("Accepted")  # she now sees bob's decision
    pages["alice"].locator("#panel").screenshot(path=str(screenshots / "curation-conflict.png"))

    hypertension.refresh_from_db()
    assert hypertension.status == Mention.Status.ACCEPTED
    assert list(Decision.objects.filter(mention=hypertension).values_list("user__username", "action")) == [("bob", "accept")]

    # Having seen bob's decision, alice can still decide: her NIL is a new decision, bob's stays in the log.
    pages["alice"].keyboard.press("n")
    expect(pages["alice"].locator("#toast")).to_contain_text("NIL")
    log = list(Decision.objects.filter(mention=hypertension).order_by("created_at").values_list("user__username", "action", "undone_at"))
    assert log == [("bob", "accept", None), ("alice", "nil", None)]
    assert Link.objects.filter(mention=hypertension, origin="curator").count() == 2


def test_a_curator_adds_a_mention_by_selecting_text_and_fixes_its_span(live_server, browser, demo_collection, bob) -> None:  # type: ignore[no-untyped-def]
    doc = Document.objects.get(collection=demo_collection, external_id="demo-1")
    page = login(browser, live_server.url, "bob", PASSWORD)
    page.goto(f"{live_server.url}/curate/demo/documents/{doc.pk}/")
    expect(_quote(page)).to_have_text("Type 2 diabetes")

    select_text(page, "in older adults")
    expect(page.locator("#selection-bar")).to_be_visible()
    page.keyboard.press("m")
    expect(_quote(page)).to_have_text("in older adults")
    added = Mention.objects.get(document=doc, text="in older adults")
    assert (added.source, added.start) == ("curator", doc.text.index("in older adults"))

    select_text(page, "in older adults", start=3)  # drop the "in "
    page.keyboard.press("e")
    expect(_quote(page)).to_have_text("older adults")
    added.refresh_from_db()
    assert (added.text, added.start) == ("older adults", doc.text.index("older adults"))
    assert list(Decision.objects.filter(mention=added).order_by("created_at").values_list("action", flat=True)) == ["add_mention", "fix_span"]
