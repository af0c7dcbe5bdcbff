"""An admin builds and activates an index from the models page while a curator has a document open: the build's card
shows the names encoded of all, names/s and the time left as a real worker encodes them (MiniLM, zero-shot, 3,600
names), Cancel stops a build mid-way, and an activated build re-links the open mentions by itself: the card
counts them and stops polling, and the curator's open page shows the new index's candidates without a reload.

The test waits on the build's state as the worker records it, not on the clock: a loaded machine may take minutes to
encode the names, and the only time limit is a guard against a build that stopped making progress (a hang)."""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Callable

import pytest
from playwright.sync_api import expect

from tests.conftest import PASSWORD
from tests.e2e.conftest import login
from tests.integration.test_index_build_progress import CONCEPTS, index_worker  # noqa: F401 (a fixture)
from webapp.corpus.models import Collection, Document, Mention
from webapp.linking.models import EncoderModel, IndexVersion
from webapp.linking.registry import get_active_linker
from webapp.training.relinking import relinking
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, Name

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.worker]

ORGANS = ["liver", "kidney", "lung", "heart", "spleen", "pancreas", "colon", "skin", "retina", "thyroid", "bladder",
          "stomach", "brain", "spine", "femur", "tibia", "ovary", "prostate", "tongue", "larynx", "aorta", "uterus"]
LESIONS = ["cyst", "abscess", "fibrosis", "atrophy", "necrosis", "polyp", "ulcer", "sarcoma", "adenoma", "hyperplasia",
           "infarct", "stenosis", "calcification", "dysplasia", "haemorrhage", "lymphoma", "fistula", "hamartoma"]
KINDS = ["congenital", "acquired", "recurrent"]
# Enough names that an idle CPU takes several seconds to encode them: the page polls once a second, and a build of
# 1,224 names (2 s on a quiet CI machine) could end between two polls before the test could cancel it mid-way. 3,600
# names (about 6 s there) leave the cancel three times that margin; 5,976 did too, but cost the second build (encoded
# to the end) over two minutes on a loaded 2-core machine.
SIDES = ["left", "right", "bilateral"]
TEXT = "Wheezing disease at night, high blood pressure, and later a heart attack."
MENTIONS = {"Wheezing disease": "D:00", "high blood pressure": "D:01", "heart attack": "D:02"}
N_NAMES = f"{sum(len(names) for names in CONCEPTS.values()) + len(KINDS) * len(LESIONS) * len(SIDES) * len(ORGANS):,}"
# Only against a hang: a build whose row shows no new phase, count or state for this long has stopped.
STALLED_S = 600
# What the page needs once the row has moved on: one poll (a second) and a render, on a loaded machine.
PAGE_S = 30_000


@pytest.fixture
def world(transactional_db, alice, bob, settings, tmp_path):  # type: ignore[no-untyped-def]
    """A dictionary of 3,600 names (the integration tests' 12 concepts and 1,188 made-up lesions with 3 names each), a
    collection with three open mentions, the zero-shot MiniLM as an encoder, and no index yet."""
    from django.db import connections

    from linker.encoders.transformer import default_base_model
    from webapp.linking.registry import forget_all

    connections.settings["default"]["CONN_MAX_AGE"] = 0  # live-server threads close their connections
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    forget_all()
    dictionary = Dictionary.objects.create(slug="tiny", title="Tiny")
    version = DictionaryVersion.objects.create(dictionary=dictionary, release="1", source_format="medic", checksum="c" * 64)
    lesions = {f"L:{n:04d}": [f"{kind} {lesion} of the {side} {organ}" for kind in KINDS]
               for n, (lesion, side, organ) in enumerate(itertools.product(LESIONS, SIDES, ORGANS))}
    concepts = Concept.objects.bulk_create([Concept(version=version, concept_id=cid, preferred_name=names[0])
                                            for cid, names in {**CONCEPTS, **lesions}.items()])
    Name.objects.bulk_create([Name(concept=c, text=n, normalized=n.lower(), is_preferred=i == 0)
                              for c in concepts for i, n in enumerate({**CONCEPTS, **lesions}[c.concept_id])])
    notes = Collection.objects.create(slug="notes", title="Clinic notes", dictionary=dictionary)
    doc = Document.objects.create(collection=notes, external_id="note-1", title="", text=TEXT)
    for text in MENTIONS:
        start = TEXT.index(text)
        Mention.objects.create(document=doc, start=start, end=start + len(text), text=text, mention_type="Disease")
    folder = str(default_base_model())
    EncoderModel.objects.create(name="zero-shot-minilm", method=EncoderModel.Method.ZERO_SHOT, base_model=folder,
                                artifact_path=folder)
    yield doc
    forget_all()


MID_ENCODING = """(selector) => {
  const count = document.querySelector(selector);
  if (!count) return false;
  const [done, total] = count.textContent.split('/').map((s) => parseInt(s.replace(/[^0-9]/g, ''), 10));
  return done > 0 && done < total;
}"""


def _row(pk: int) -> dict[str, object]:
    return IndexVersion.objects.filter(pk=pk).values("state", "phase", "progress", "progress_total", "error")[0]


def _wait_for_build(pk: int, reached: Callable[[dict[str, object]], bool], what: str,
                    passing: tuple[str, ...] = (IndexVersion.State.BUILDING,)) -> dict[str, object]:
    """Until the index's row (as its worker records it) satisfies ``reached``; fails when it comes to a state not in
    ``passing`` without getting there, or when it stops changing for STALLED_S seconds (a hang), never because the
    machine is slow."""
    row, changed_at = _row(pk), time.monotonic()
    while not reached(row):
        assert row["state"] in passing, f"index {pk} ended before {what}: {row}"
        assert time.monotonic() - changed_at < STALLED_S, f"index {pk} made no progress for {STALLED_S} s before {what}: {row}"
        time.sleep(0.25)
        now = _row(pk)
        if now != row:
            row, changed_at = now, time.monotonic()
    return row


def _encoding(row: dict[str, object]) -> bool:
    return row["phase"] == "encoding" and 0 < int(row["progress"] or 0) < int(row["progress_total"] or 0)  # type: ignore[call-overload]


def _wait_for_relinking(pk: int) -> None:
    """Until the worker has re-linked every open mention of the activated index's collections; fails only when the
    count of re-linked mentions stops moving for STALLED_S seconds."""
    index = IndexVersion.objects.get(pk=pk)
    counts, changed_at = [r.linked for r in relinking(index)], time.monotonic()
    while not all(r.done for r in relinking(index)):
        assert time.monotonic() - changed_at < STALLED_S, f"index {pk}'s re-linking stopped at {counts}"
        time.sleep(0.25)
        now = [r.linked for r in relinking(index)]
        if now != counts:
            counts, changed_at = now, time.monotonic()


def _wait_mid_encoding(page, pk: int) -> None:  # type: ignore[no-untyped-def]
    """Until the card shows some names of all encoded, for as long as the worker is still encoding them; fails saying
    what the card went through and what the row was when the build leaves encoding without being seen there."""
    card = f"#index-build-{pk}"
    page.evaluate("""(card) => { window.seen = [];
      document.body.addEventListener('htmx:afterSettle', () => {
        const c = document.querySelector(card); if (c) window.seen.push(c.dataset.phase + ' ' + c.querySelector('.build-phase, [role=alert], p').textContent.trim());
      }); }""", card)
    _wait_for_build(pk, _encoding, "encoding names")
    while True:
        try:
            page.wait_for_function(MID_ENCODING, arg=f"{card} .build-count", timeout=5_000)
            return
        except Exception as exc:
            row = _row(pk)
            if not _encoding(row):
                seen = page.evaluate("window.seen")
                raise AssertionError(f"index {pk} never showed names of all encoded; the card showed {seen}; row {row}") from exc


def _build(page, live_server) -> int:  # type: ignore[no-untyped-def]
    """Build an index of "tiny" with the zero-shot MiniLM from the models page's form ("Activate when built" ticked,
    as the form opens); returns its id."""
    page.goto(f"{live_server.url}/training/models/")
    page.select_option("#build-dictionary", "tiny")
    page.wait_for_function("!document.querySelector('.htmx-request')")
    page.select_option("#build-encoder", "zero-shot-minilm")
    page.wait_for_function("!document.querySelector('.htmx-request')")
    expect(page.locator("#build-activate")).to_be_checked()
    before = set(IndexVersion.objects.values_list("pk", flat=True))
    page.click("#build-index-form button[type=submit]")
    page.wait_for_url(re.compile(r"/training/models/#index-versions$"))
    (pk,) = set(IndexVersion.objects.values_list("pk", flat=True)) - before
    expect(page.locator(".messages")).to_contain_text(f"Index {pk} of Tiny (zero-shot-minilm) is building on a worker")
    return pk


def test_an_admin_builds_and_activates_an_index_and_the_curators_page_gets_its_candidates(  # type: ignore[no-untyped-def]
    live_server, browser, world, index_worker, screenshots  # noqa: F811
) -> None:
    doc = world
    curator = login(browser, live_server.url, "bob", PASSWORD)
    curator.goto(f"{live_server.url}/curate/notes/")
    expect(curator.locator("text=not linked yet")).to_have_count(3)  # no index yet
    curator.goto(f"{live_server.url}/curate/notes/documents/{doc.pk}/")
    expect(curator.locator("#panel")).to_contain_text("No model suggestions")

    admin = login(browser, live_server.url, "alice", PASSWORD)
    admin.goto(f"{live_server.url}/training/models/")
    admin.locator("#index-build").screenshot(path=str(screenshots / "index-build-form.png"))

    # 1. A build cancelled while it encodes: it ends "cancelled" with how far it came, and nothing is activated.
    first = _build(admin, live_server)
    card = admin.locator(f"#index-build-{first}")
    _wait_for_build(first, _encoding, "encoding names")
    expect(card).to_have_attribute("data-phase", "encoding", timeout=PAGE_S)
    card.locator("button", has_text="Cancel build").click()
    _wait_for_build(first, lambda row: row["state"] == IndexVersion.State.CANCELLED, "being cancelled")
    expect(card).to_have_attribute("data-state", "cancelled", timeout=PAGE_S)
    expect(card.locator("[role=alert]")).to_contain_text(
        re.compile(rf"^Cancelled by an admin while encoding names, after [\d,]+ of {N_NAMES} names; nothing of it was kept\.$"))
    expect(card).to_contain_text("Not activated: Tiny has no active index yet.")
    expect(card).not_to_have_attribute("hx-trigger", re.compile("."))  # no more polling
    card.screenshot(path=str(screenshots / "index-build-cancelled.png"))
    assert not IndexVersion.objects.filter(state=IndexVersion.State.ACTIVE).exists()

    # 2. A build that runs to the end: names encoded of all, names/s and the time left while it encodes ...
    second = _build(admin, live_server)
    card = admin.locator(f"#index-build-{second}")
    expect(card.locator(".build-phase")).to_be_visible()
    _wait_mid_encoding(admin, second)
    expect(card.locator(".build-count")).to_contain_text(f"/ {N_NAMES}")
    expect(card.locator(".build-rate")).to_contain_text(re.compile(r"^[\d,]+ names/s$"))
    expect(card.locator(".build-eta")).to_contain_text(re.compile(r"^about \d+ (s|min \d+ s) left$"))
    expect(card.locator("progress")).to_be_visible()
    admin.screenshot(path=str(screenshots / "index-build-progress.png"), full_page=True)

    # ... then it is activated and the open mentions re-linked on the worker; the card counts them and stops.
    _wait_for_build(second, lambda row: row["state"] == IndexVersion.State.ACTIVE, "being activated",
                    passing=(IndexVersion.State.BUILDING, IndexVersion.State.READY))
    expect(card).to_have_attribute("data-state", "active", timeout=PAGE_S)
    _wait_for_relinking(second)
    relinked = card.locator(f'#relinking-{second} tr[data-collection="notes"]')
    expect(relinked).to_have_attribute("data-done", "true", timeout=PAGE_S)
    expect(relinked.locator(".relinked")).to_have_text("3 / 3")
    expect(card).not_to_have_attribute("hx-trigger", re.compile("."))
    expect(admin.locator(f"#index-{second}")).to_have_attribute("data-state", "active")  # the list refreshed itself
    expect(admin.locator(f"#index-{first}")).to_have_attribute("data-state", "cancelled")
    label = IndexVersion.objects.get(pk=second).label
    expect(admin.locator("#model-table")).to_contain_text(label)  # so did the active models
    card.screenshot(path=str(screenshots / "index-build-activated.png"))

    # The curator's page, open all along, shows the new index's candidates: no reload. The web process loads the new
    # index's linker on its first panel; it is loaded here first (this process serves the live server), so that each
    # panel below waits on a render only, however slow the machine is at loading a model.
    assert get_active_linker("tiny") is not None
    for text, concept in reversed(MENTIONS.items()):  # the first is selected already: its panel is as it loaded
        curator.locator(f"#mention-{Mention.objects.get(document=doc, text=text).pk}").click()
        expect(curator.locator('#panel .candidate[data-number="1"]')).to_have_attribute("data-concept-id", concept)
        expect(curator.locator("#panel")).to_contain_text(label)
    curator.screenshot(path=str(screenshots / "index-build-candidates.png"), full_page=True)
    curator.goto(f"{live_server.url}/curate/notes/")
    expect(curator.locator("text=not linked yet")).to_have_count(0)  # every open mention carries its suggestions
