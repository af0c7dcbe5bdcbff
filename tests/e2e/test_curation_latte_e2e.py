"""A curator in Chromium with a LATTE re-ranker serving the demo: the panel shows latent types, the type
conflict of a candidate (its tooltip says why) and which model ranked. Screenshot: curation-latte-panel.png."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.conftest import PASSWORD
from tests.curation_latte import activate_artifact, mention_with_a_conflict, train_demo_latte
from tests.e2e.conftest import login
from webapp.linking.registry import get_active_linker

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_a_curator_sees_latent_types_and_a_type_conflict(live_server, browser, demo_collection, bob, screenshots, latte_cache: Path) -> None:  # type: ignore[no-untyped-def]
    activate_artifact(demo_collection.dictionary.latest_version(), train_demo_latte(latte_cache, demo_collection))
    active = get_active_linker("medic-demo")
    assert active is not None and active.linker.reranker is not None
    mention, expected = mention_with_a_conflict(active.linker, demo_collection)
    conflicted = next(i for i, t in enumerate(expected.typing or []) if t.type_conflict)

    page = login(browser, live_server.url, "bob", PASSWORD)
    page.goto(f"{live_server.url}/curate/demo/documents/{mention.document_id}/")
    page.locator(f"#mention-{mention.pk}").click()
    expect(page.locator("#panel .panel-quote")).to_have_text(mention.text)
    expect(page.locator("#panel .ranked-by")).to_contain_text("LATTE re-ranker")
    expect(page.locator("#panel .mention-types")).to_contain_text(expected.mention_known_types[0][0])
    first = page.locator('#panel .candidate[data-number="1"]')
    expect(first).to_have_attribute("data-concept-id", expected.candidates[0].concept_id)
    expect(first.locator(".cand-latent")).to_contain_text("latent: ")
    mark = page.locator(f'#panel .candidate[data-number="{conflicted + 1}"] .type-conflict')
    expect(mark).to_be_visible()
    assert "the mention is predicted as" in (mark.get_attribute("title") or "")
    page.set_viewport_size({"width": 1440, "height": 2400})
    mark.hover()
    page.wait_for_timeout(200)
    page.locator("#panel").screenshot(path=str(screenshots / "curation-latte-panel.png"))
