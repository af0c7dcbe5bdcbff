"""Confidence and auto-accept in Chromium: a curator sees how likely the top-1 is (and when no concept is likely);
an admin turns auto-accept on and the linker accepts the mentions it is sure of (issue #15)."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from linker.calibration import Calibration
from tests.conftest import PASSWORD
from tests.e2e.conftest import login
from webapp.corpus.models import Document, Link, Mention
from webapp.curation.models import Decision
from webapp.curation.services.suggestions import suggest_for_collection
from webapp.linking.models import IndexVersion
from webapp.linking.registry import forget_all

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# P(right) = σ(5·exact_name − 1): 98% when the matched name is the mention itself, 27% otherwise; NIL below 50%.
EXACT_IS_SURE = Calibration(weights=(0.0, 0.0, 0.0, 0.0, 5.0), bias=-1.0, mean=(0.0,) * 5, scale=(1.0,) * 5,
                            nil_threshold=0.5, fitted_on={"examples": 100, "right": 60, "nil": 10})


def test_the_panel_shows_confidence_and_an_admin_turns_on_auto_accept(live_server, browser, demo_collection, alice, bob,
                                                                       screenshots) -> None:  # type: ignore[no-untyped-def]
    index = IndexVersion.objects.get(state=IndexVersion.State.ACTIVE)
    EXACT_IS_SURE.save(Path(index.artifact_path))
    forget_all()  # the serving linker is loaded again, with its calibration
    Link.objects.filter(mention__document__collection=demo_collection, origin=Link.Origin.MODEL).delete()
    Mention.objects.filter(document__collection=demo_collection).update(status=Mention.Status.PENDING)
    suggest_for_collection(demo_collection.pk)

    doc = Document.objects.get(collection=demo_collection, external_id="demo-1")
    curator = login(browser, live_server.url, "bob", PASSWORD)
    curator.goto(f"{live_server.url}/curate/demo/documents/{doc.pk}/?m={Mention.objects.get(document=doc, text='hypertension').pk}")
    expect(curator.locator("#panel .confidence")).to_have_text("top-1 98% likely")
    expect(curator.locator("#panel .says-nil")).to_have_count(0)
    curator.locator("#panel").screenshot(path=str(screenshots / "confidence-panel-sure.png"))
    doubtful = Link.objects.filter(mention__document__collection=demo_collection, origin=Link.Origin.MODEL, rank=1,
                                   part=0, confidence__lt=0.5).select_related("mention").order_by("mention_id").first()
    assert doubtful is not None
    curator.goto(f"{live_server.url}/curate/demo/documents/{doubtful.mention.document_id}/?m={doubtful.mention_id}")
    expect(curator.locator("#panel .confidence")).to_have_text("top-1 27% likely")
    expect(curator.locator("#panel .says-nil")).to_contain_text("Probably no concept fits")
    curator.locator("#panel").screenshot(path=str(screenshots / "confidence-panel-doubtful.png"))
    # A curator sees the setting but cannot change it.
    curator.goto(f"{live_server.url}/curate/demo/")
    expect(curator.locator("#auto-accept")).to_contain_text("Off: every mention waits for a curator.")
    expect(curator.locator("#auto-threshold")).to_have_count(0)

    admin = login(browser, live_server.url, "alice", PASSWORD)
    admin.goto(f"{live_server.url}/curate/demo/")
    admin.fill("#auto-threshold", "0.95")
    admin.locator("#auto-accept button", has_text="Set").click()
    expect(admin.locator(".messages, [role=status], .alert").first).to_contain_text("Auto-accept at 95%")
    # The worker's pass, run here: the mentions named exactly as a dictionary name are accepted by the linker.
    suggest_for_collection(demo_collection.pk)
    accepted = Decision.objects.filter(via=Decision.Via.AUTO, document__collection=demo_collection).count()
    assert accepted > 0
    admin.reload()
    expect(admin.locator("#auto-accept")).to_contain_text(f"{accepted} mention")
    expect(admin.locator("#auto-accept")).to_contain_text("at least 95% likely right")
    admin.locator("#auto-accept").screenshot(path=str(screenshots / "confidence-auto-accept-card.png"))
    admin.screenshot(path=str(screenshots / "confidence-dashboard.png"), full_page=True)
