"""A team in Chromium: the manager assigns a document to two annotators, each annotates their own copy with the
keyboard and marks it done, the adjudicator resolves a disagreement with one key, and the agreement page moves.
Screenshots of the project page, the adjudication screen and the agreement page are saved."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.conftest import PASSWORD
from tests.e2e.conftest import login
from tests.integration.project_fixtures import make_user
from webapp.corpus.models import Document, Link, Mention
from webapp.projects.models import Adjudication, Assignment, Member
from webapp.projects.services.membership import add_member, create_project

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


DECIDED = re.compile("accepted|relinked")


def _annotate(page, base_url: str, assignment: Assignment, first_key: str) -> None:  # type: ignore[no-untyped-def]
    """Open the copy from the queue, decide every mention with the keyboard (``first_key`` on the first, ``a``
    on the rest), and mark the document done."""
    page.goto(f"{base_url}/projects/duo/queue/")
    page.click("#start-next")
    expect(page.locator(".project-banner")).to_contain_text("Your copy of demo-1")
    texts = list(assignment.copy.mentions.order_by("start").values_list("text", flat=True))
    quote = page.locator("#panel .panel-quote")
    for i, text in enumerate(texts):
        expect(quote).to_have_text(text)  # the page moved on to the next open mention by itself
        shown = page.locator("#panel .panel-body").get_attribute("data-mention-id")
        page.keyboard.press(first_key if i == 0 else "a")
        # Decided before the next key: the last one has no next panel to wait for.
        expect(page.locator(f'#document-text mark[data-mention-id="{shown}"]').first).to_have_attribute("data-status", DECIDED)
    expect(page.locator('#status-counts [data-status-count="pending"]')).to_have_text("0")
    page.click("#mark-done")
    expect(page.locator("ul.messages")).to_contain_text("demo-1 is done")


def test_two_annotators_then_an_adjudicator_and_the_agreement_moves(live_server, browser, demo_collection, alice, bob, screenshots) -> None:  # type: ignore[no-untyped-def]
    dave, erin = make_user("dave"), make_user("erin")
    project = create_project(by=alice, slug="duo", title="Duo", collection=demo_collection, annotators_per_document=2)
    for user, role in ((bob, Member.Role.ANNOTATOR), (dave, Member.Role.ANNOTATOR), (erin, Member.Role.ADJUDICATOR)):
        add_member(project, user, role, alice)
    doc = Document.objects.get(collection=demo_collection, external_id="demo-1")

    # The manager assigns demo-1 to both annotators by hand.
    manager = login(browser, live_server.url, "alice", PASSWORD)
    manager.goto(f"{live_server.url}/projects/duo/")
    manager.check('#assign-form input[value="manual"]')
    manager.check('#assign-form input[value="bob"]')
    manager.check('#assign-form input[value="dave"]')
    manager.fill("#assign-form textarea[name=documents]", "demo-1")
    manager.click("#assign-form button[type=submit]")
    expect(manager.locator("ul.messages")).to_contain_text("2 assignments made over 1 document")
    manager.screenshot(path=str(screenshots / "project-overview.png"), full_page=True)

    # Each annotator on their own copy: bob takes the top candidates, dave the second candidate on the first mention.
    _annotate(login(browser, live_server.url, "bob", PASSWORD), live_server.url, Assignment.objects.get(annotator=bob), "a")
    _annotate(login(browser, live_server.url, "dave", PASSWORD), live_server.url, Assignment.objects.get(annotator=dave), "2")

    # The adjudicator sees the one disagreement, on the first mention, and takes bob's decision with "1".
    adjudicator = login(browser, live_server.url, "erin", PASSWORD)
    adjudicator.goto(f"{live_server.url}/projects/duo/agreement/")
    expect(adjudicator.locator("#open-disagreements")).to_have_text("1")
    adjudicator.goto(f"{live_server.url}/projects/duo/adjudicate/")
    adjudicator.click(f'a[href="/projects/duo/adjudicate/{doc.pk}/"]')
    expect(adjudicator.locator("#open-count")).to_have_text("1")
    selected = adjudicator.locator(".unit.unit-selected")
    expect(selected).to_contain_text("Type 2 diabetes")
    expect(selected).to_contain_text("disagreement")
    adjudicator.screenshot(path=str(screenshots / "adjudication.png"), full_page=True)
    adjudicator.keyboard.press("1")
    expect(adjudicator.locator("ul.messages")).to_contain_text("bob's decision")
    expect(adjudicator.locator("#open-count")).to_have_text("0")
    adjudicator.click("#apply-agreed")
    expect(adjudicator.locator("ul.messages")).to_contain_text("8 agreed decisions written to demo-1")

    adjudicator.goto(f"{live_server.url}/projects/duo/agreement/")
    expect(adjudicator.locator("#open-disagreements")).to_have_text("0")
    expect(adjudicator.locator("#with-adjudicated")).to_contain_text("bob")
    rows = {r.split()[0]: r.split()[1] for r in adjudicator.locator("#with-adjudicated tr").all_inner_texts()}
    assert rows["bob"] == "1.000" and rows["dave"] == "0.889"  # dave differs on one of the nine resolved spans
    adjudicator.screenshot(path=str(screenshots / "agreement.png"), full_page=True)

    # The project's document now carries the adjudicated links, with who decided them.
    first = Mention.objects.get(document=doc, text="Type 2 diabetes")
    link = Link.objects.filter(mention=first, origin=Link.Origin.CURATOR).latest("created_at")
    assert link.created_by == erin
    assert Adjudication.objects.get(project=project, mention=first).chosen_annotator == bob
    assert not doc.mentions.filter(status__in=[Mention.Status.PENDING, Mention.Status.SUGGESTED]).exists()
