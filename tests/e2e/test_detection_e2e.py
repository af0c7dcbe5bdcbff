"""Mention detection in the browser, a real Celery worker importing and detecting: an admin uploads a plain-text
note on the Import documents page; the document opens with its mentions highlighted as the detector's (dashed),
the panel says what found them; the curator fixes one span with the keyboard, and the edit is recorded as a
decision, which the panel shows with its undo (a tagger run later trains on the moved span)."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.conftest import PASSWORD
from tests.e2e.conftest import login, select_offsets
from tests.integration.detection_helpers import detection_worker, mini_dictionary, mini_index, notes, wait_for  # noqa: F401
from webapp.corpus.models import Document, Mention
from webapp.curation.models import Decision
from webapp.imports.models import ImportJob
from webapp.linking.registry import forget_all

pytestmark = [pytest.mark.worker, pytest.mark.slow]

NOTE = "Follow-up visit\n\nSevere bronchial asthma and high blood pressure since 2019; no diabetes.\n"


@pytest.fixture
def world(transactional_db, alice, detection_worker, settings, tmp_path: Path):  # type: ignore[no-untyped-def]  # noqa: F811
    from django.contrib.auth.models import Group
    from django.db import connections

    from webapp.core.roles import ROLES

    connections.settings["default"]["CONN_MAX_AGE"] = 0  # live-server threads close their connections
    for role in ROLES:
        Group.objects.get_or_create(name=role)
    forget_all()
    settings.TASK_QUEUE_OVERRIDE = detection_worker.queue  # the import job and its detection go to this worker
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    version = mini_dictionary()
    index = mini_index(tmp_path, version)
    notes(version.dictionary)
    yield index
    forget_all()


def test_an_uploaded_text_opens_highlighted_and_a_fixed_span_is_recorded(live_server, browser, world, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                         screenshots) -> None:
    note = tmp_path / "visit-12.txt"
    note.write_text(NOTE, encoding="utf-8")
    page = login(browser, live_server.url, "alice", PASSWORD)
    page.goto(f"{live_server.url}/imports/documents/?collection=notes")
    page.set_input_files("#id_file", str(note))
    page.select_option("#id_collection", "notes")
    page.click("#import-documents-form button[type=submit]")
    page.wait_for_url(lambda url: "/imports/?job=" in url)
    page.wait_for_selector("#import-table tr.highlight[data-state=succeeded]", timeout=90_000)
    assert ImportJob.objects.get().params["format"] == "text"  # told from the file: no PubTator, a plain text

    document = Document.objects.get(collection__slug="notes", external_id="visit-12")
    page.goto(f"{live_server.url}/curate/notes/documents/{document.pk}/")
    # While the worker detects, the banner polls; the mentions arrive without a reload.
    wait_for(lambda: Document.objects.get(pk=document.pk).detection_state in ("done", "failed"), what="detection")
    expect(page.locator("#document-text mark.by-detector")).to_have_count(3, timeout=30_000)
    assert Document.objects.get(pk=document.pk).detection_state == "done"
    marks = page.locator("#document-text mark.by-detector")
    assert [marks.nth(i).inner_text() for i in range(3)] == ["bronchial asthma", "high blood pressure", "diabetes"]
    assert "Mentions found by the detector" in page.locator("#detection-status").inner_text()
    page.screenshot(path=str(screenshots / "detection-document.png"), full_page=True)

    asthma = Mention.objects.get(document=document, text="bronchial asthma")
    assert (asthma.source, asthma.detector, asthma.model_version) == ("detector", "matcher", world.label)
    page.locator(f"#mention-{asthma.pk}").click()
    expect(page.locator("#panel .panel-quote")).to_have_text("bronchial asthma")
    expect(page.locator("#mention-provenance")).to_contain_text("Found by the dictionary matcher")

    # The annotation guidelines want the severity in the span: select it with the words and press e.
    start = document.text.index("Severe")
    select_offsets(page, start, start + len("Severe bronchial asthma"))
    page.keyboard.press("e")
    expect(page.locator("#panel .panel-quote")).to_have_text("Severe bronchial asthma")
    page.screenshot(path=str(screenshots / "detection-span-fixed.png"), full_page=True)
    asthma.refresh_from_db()
    assert (asthma.text, asthma.start) == ("Severe bronchial asthma", document.text.index("Severe"))
    decision = Decision.objects.get(mention=asthma, action=Decision.Action.FIX_SPAN)
    assert decision.user.username == "alice"

    # The panel says what was done and by whom, with its undo.
    expect(page.locator("#decision-line")).to_contain_text("Fixed the span by alice")
    assert Mention.objects.filter(document=document, source="detector").count() == 3  # still the detector's mention
