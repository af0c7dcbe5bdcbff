"""The documentation's screenshots (issue #46): the main pages at 1440x900 on the demo data. `scripts/docs screens`
(DOCS_SCREENSHOTS=1) saves them over docs/assets/screens/*.png, which the docs pages embed: look at them and commit
them. Every other run (the suite) takes them into a temporary folder, so that a test run leaves the tracked images
alone while still checking that each page shows what its screenshot is meant to show."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.conftest import PASSWORD
from tests.e2e.conftest import PROJECT_ROOT, login
from webapp.corpus.models import Document

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

DOCS_SCREENS = PROJECT_ROOT / "docs" / "assets" / "screens"
MAX_BYTES = 300_000  # the screenshots are committed: a larger one bloats the repository


@pytest.fixture
def screens(tmp_path: Path) -> Path:
    folder = DOCS_SCREENS if os.environ.get("DOCS_SCREENSHOTS") == "1" else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _shoot(page, folder: Path, name: str) -> Path:  # type: ignore[no-untyped-def]
    page.wait_for_load_state("networkidle")
    path = folder / f"{name}.png"
    page.screenshot(path=str(path))  # the viewport only: what a 1440x900 screen shows
    assert path.stat().st_size < MAX_BYTES, f"{path.name} is {path.stat().st_size:,} bytes, over {MAX_BYTES:,}"
    return path


def test_the_docs_screenshots_show_the_main_pages(live_server, browser, demo_collection, alice, screens) -> None:  # type: ignore[no-untyped-def]
    page = login(browser, live_server.url, "alice", PASSWORD)
    page.set_viewport_size({"width": 1440, "height": 900})

    page.goto(f"{live_server.url}/")
    expect(page.locator("main")).to_contain_text("demo", ignore_case=True)
    _shoot(page, screens, "home")

    doc = Document.objects.get(collection=demo_collection, external_id="demo-1")
    page.goto(f"{live_server.url}/curate/demo/documents/{doc.pk}/")
    expect(page.locator("#panel .panel-quote")).to_have_text("Type 2 diabetes")  # the first open mention, its panel open
    expect(page.locator("#panel .candidate")).to_have_count(10)
    _shoot(page, screens, "curation")

    page.goto(f"{live_server.url}/training/models/")
    expect(page.locator("main")).to_contain_text("medic-demo")
    _shoot(page, screens, "models")

    page.goto(f"{live_server.url}/jobs/")
    expect(page.locator("h1")).to_contain_text("Jobs")
    _shoot(page, screens, "jobs")
