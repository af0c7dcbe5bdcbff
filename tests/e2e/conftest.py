"""Browser tests: Debian's headless Chromium (never a downloaded browser) against pytest-django's live server.

The live server runs in a thread of the test process, on a transactional test database; the linker registry
is shared with the test, so a test can ask the live index what the browser's decisions taught it.
Screenshots go to ``test-artifacts/screenshots/`` (or ``E2E_SCREENSHOTS``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
PROJECT_ROOT = Path(__file__).resolve().parents[2]

# Playwright's sync API runs an event loop in this thread; the ORM calls of the tests themselves are
# ordinary synchronous calls between browser steps.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/e2e/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.e2e)
            if not CHROMIUM.exists():
                item.add_marker(pytest.mark.skip(reason=f"{CHROMIUM} is absent: install Debian's chromium package to run browser tests"))


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-background-networking"]
        )
        yield browser
        browser.close()


@pytest.fixture
def screenshots() -> Path:
    folder = Path(os.environ.get("E2E_SCREENSHOTS") or PROJECT_ROOT / "test-artifacts" / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def demo_collection(transactional_db, tmp_path, settings):  # type: ignore[no-untyped-def]
    """The demo collection (6 abstracts, a MEDIC slice) with an active sparse index; role groups restored."""
    from django.contrib.auth.models import Group
    from django.db import connections

    from webapp.core.roles import ROLES
    from webapp.corpus.models import Collection
    from webapp.demo.load import load_demo
    from webapp.linking.registry import forget_all
    from webapp.training.services import activate_index, build_index, create_index_version
    from webapp.vocab.models import Dictionary

    # Request threads of the live server close their connections after each request, so the test database
    # can be dropped at the end of the session.
    connections.settings["default"]["CONN_MAX_AGE"] = 0
    for role in ROLES:  # a transactional test flushes the groups the migration made
        Group.objects.get_or_create(name=role)
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    forget_all()
    load_demo(tmp_path / "demo", log=lambda message: None)
    version = Dictionary.objects.get(slug="medic-demo").latest_version()
    activate_index(build_index(create_index_version(version, None)).pk)
    yield Collection.objects.get(slug="demo")
    forget_all()


def login(browser: object, base_url: str, username: str, password: str) -> object:
    """A fresh browser context logged in as ``username``; returns its page."""
    context = browser.new_context(viewport={"width": 1440, "height": 1000})  # type: ignore[attr-defined]
    page = context.new_page()
    page.goto(f"{base_url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/accounts/login" not in url)
    return page


def select_text(page, needle: str, start: int = 0, length: int | None = None) -> None:  # type: ignore[no-untyped-def]
    """Select ``needle`` (or a slice of it) in the document text, as a mouse drag would, and release the mouse."""
    page.evaluate(
        """([needle, start, length]) => {
          const walker = document.createTreeWalker(document.getElementById('document-text'), NodeFilter.SHOW_TEXT);
          let node;
          while ((node = walker.nextNode())) {
            const at = node.textContent.indexOf(needle);
            if (at < 0) continue;
            const range = document.createRange();
            range.setStart(node, at + start);
            range.setEnd(node, at + start + (length === null ? needle.length - start : length));
            const selection = window.getSelection();
            selection.removeAllRanges();
            selection.addRange(range);
            return;
          }
          throw new Error('text not found: ' + needle);
        }""",
        [needle, start, length],
    )
    page.dispatch_event("#document-text", "mouseup")


def select_offsets(page, start: int, end: int) -> None:  # type: ignore[no-untyped-def]
    """Select the characters ``start``..``end`` of the document text, across highlighted and plain segments (each
    segment element carries its offset in ``data-start``), as a mouse drag would, and release the mouse."""
    page.evaluate(
        """([start, end]) => {
          const segments = [...document.querySelectorAll('#document-text [data-start]')];
          const at = (offset) => {
            for (const el of segments) {
              const from = Number(el.dataset.start), node = el.firstChild;
              if (node && from <= offset && offset <= from + node.textContent.length) return [node, offset - from];
            }
            throw new Error('offset not in the document text: ' + offset);
          };
          const range = document.createRange();
          range.setStart(...at(start));
          range.setEnd(...at(end));
          const selection = window.getSelection();
          selection.removeAllRanges();
          selection.addRange(range);
        }""",
        [start, end],
    )
    page.dispatch_event("#document-text", "mouseup")
