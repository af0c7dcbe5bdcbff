"""A curator in Chromium on a long document shown a part at a time: the page opens on the part of the mention asked
for, a selection in a later part adds a mention at its true offsets, and once a part's last open mention is decided
the page goes on to the next part."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.conftest import PASSWORD
from tests.e2e.conftest import login, select_text
from tests.integration.long_document import SENTENCE, long_document
from webapp.corpus.models import Mention
from webapp.corpus.windows import window_number

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_a_curator_works_through_a_long_document_part_by_part(
    live_server, browser, transactional_db, bob
) -> None:  # type: ignore[no-untyped-def]
    document = long_document(sentences=700)  # 45,500 characters: three parts
    first, second = window_number(document, 1), window_number(document, 2)
    assert first.count == 3
    in_first = Mention.objects.filter(document=document, start__lt=first.end).order_by("start")
    last = in_first.last()
    in_first.exclude(pk=last.pk).update(status=Mention.Status.REJECTED)  # all but one decided already

    page = login(browser, live_server.url, "bob", PASSWORD)
    page.goto(f"{live_server.url}/curate/long/documents/{document.pk}/?m={last.pk}")
    expect(page.locator(".window-nav").first).to_contain_text(f"Part 1 of 3: characters 1–{first.end}")
    expect(page.locator("#panel .panel-quote")).to_have_text("asthma")
    page.keyboard.press("x")  # reject the part's last open mention: on to the next part
    page.wait_for_url(re.compile(r"\?part=2$"))
    expect(page.locator(".window-nav").first).to_contain_text("Part 2 of 3")
    last.refresh_from_db()
    assert last.status == Mention.Status.REJECTED

    # "inhaled steroids" of the part's first sentence: the page's offsets count in the whole text.
    sentence = second.start // len(SENTENCE) + (1 if second.start % len(SENTENCE) else 0)
    select_text(page, "inhaled steroids")
    page.keyboard.press("m")
    expect(page.locator("#panel .panel-quote")).to_have_text("inhaled steroids")
    added = Mention.objects.get(document=document, text="inhaled steroids")
    assert added.start == sentence * len(SENTENCE) + SENTENCE.index("inhaled steroids")
    assert second.start <= added.start < second.end
    page.context.close()
