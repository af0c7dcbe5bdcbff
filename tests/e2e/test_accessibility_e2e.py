"""Accessibility (issue #46): axe-core (from the npm registry, tests/e2e/axe.py) on the main pages as a curator, as
an admin and logged out, with no serious or critical violation of WCAG 2.2 A/AA; the text of every mention status's
highlight at 4.5:1 or more; and a keyboard focus ring that can be seen on links, buttons, fields, mentions and
candidate rows. The per-page counts by impact are printed with the test's output."""

from __future__ import annotations

import socket
from dataclasses import dataclass

import pytest
from django.utils import timezone

from tests.conftest import PASSWORD
from tests.e2e.axe import Violation, axe_source, blocking, run_axe, summary
from tests.e2e.conftest import login
from webapp.corpus.models import Document, Mention

STATUSES = [status.value for status in Mention.Status]


@dataclass(frozen=True)
class Screen:
    name: str
    path: str
    ready: str  # a selector the page shows once it is whole (the curation panel loads after the page)


@pytest.fixture
def world(demo_collection, alice, bob, monkeypatch):  # type: ignore[no-untyped-def]
    """The demo collection; its first document has a mention in every status (the first one open, so the panel
    opens on it); a project bob manages; a finished training run; the workbench's worker on this machine."""
    from webapp.projects.models import Member, Project
    from webapp.training import workers
    from webapp.training.models import TrainingRun
    from webapp.training.params import clean_params
    from webapp.vocab.models import Concept

    monkeypatch.setattr(workers, "_queue_workers", lambda queue: [f"worker@{socket.gethostname()}"])
    monkeypatch.setattr(workers, "local_cuda", lambda: False)
    doc = Document.objects.get(collection=demo_collection, external_id="demo-1")
    mentions = list(Mention.objects.filter(document=doc).order_by("start", "pk"))
    assert len(mentions) >= len(STATUSES), "demo-1 has too few mentions for one of each status"
    for mention, status in zip(mentions[1:len(STATUSES)], STATUSES[1:], strict=True):
        Mention.objects.filter(pk=mention.pk).update(status=status)
    project = Project.objects.create(slug="demo-team", title="Demo team", collection=demo_collection, created_by=alice)
    Member.objects.create(project=project, user=bob, role=Member.Role.MANAGER)
    now = timezone.now()
    run = TrainingRun.objects.create(
        dictionary=demo_collection.dictionary, params=clean_params({}), state="succeeded", device="cpu",
        worker=socket.gethostname(), phase="done", epoch=1, epochs=1, step=20, total_steps=20, fraction=1.0,
        loss_history=[{"phase": "biosyn", "step": s, "loss": round(2.0 * 0.9 ** s + 0.3, 4)} for s in range(1, 21)],
        metrics={"acc@1": 0.81, "acc@5": 0.95, "mrr": 0.87, "n": 40.0, "mentions": 40.0},
        snapshot_at=now, started_at=now, finished_at=now,
    )
    run.collections.set([demo_collection])
    concept = Concept.objects.filter(version__dictionary=demo_collection.dictionary).order_by("pk").first()
    return {"doc": doc, "project": project, "run": run, "concept": concept}


def _curator_screens(world: dict) -> list[Screen]:  # type: ignore[type-arg]
    doc, dictionary = world["doc"], world["doc"].collection.dictionary
    return [
        Screen("home", "/", "main h1"),
        Screen("review queue", "/curate/demo/", "main h1"),
        Screen("curation screen", f"/curate/demo/documents/{doc.pk}/", "#panel .candidate"),
        Screen("collection", "/collections/demo/", "main h1"),
        Screen("document", f"/collections/demo/documents/{doc.pk}/", "main h1"),
        Screen("dictionary", f"/dictionaries/{dictionary.slug}/", "main h1"),
        Screen("concept", f"/dictionaries/{dictionary.slug}/concepts/{world['concept'].concept_id}/", "main h1"),
        Screen("projects", "/projects/", "main h1"),
        Screen("project", f"/projects/{world['project'].slug}/", "main h1"),
    ]


def _admin_screens(world: dict) -> list[Screen]:  # type: ignore[type-arg]
    return [
        Screen("home", "/", "main h1"),
        Screen("curation screen", f"/curate/demo/documents/{world['doc'].pk}/", "#panel .candidate"),
        Screen("models", "/training/models/", "main h1"),
        Screen("training runs", "/training/", "main h1"),
        Screen("run form", "/training/runs/new/", "main h1"),
        Screen("run", f"/training/runs/{world['run'].pk}/", "main h1"),
        Screen("jobs", "/jobs/", "main h1"),
        Screen("imports", "/imports/", "main h1"),
        Screen("people", "/people/", "main h1"),
        Screen("audit", "/audit/", "main h1"),
    ]


def _report(results: dict[str, list[Violation]]) -> str:
    width = max(len(name) for name in results)
    lines = [f"axe-core on {len(results)} pages (failing elements by impact):"]
    for name, violations in results.items():
        rules = ", ".join(f"{v.rule} ({v.impact})" for v in violations)
        lines.append(f"  {name:<{width}}  {summary(violations)}" + (f"  [{rules}]" if rules else ""))
    return "\n".join(lines)


def test_the_main_pages_have_no_serious_or_critical_axe_violations(live_server, browser, world, capsys) -> None:  # type: ignore[no-untyped-def]
    source = axe_source()
    results: dict[str, list[Violation]] = {}
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    results["logged out: login"] = run_axe(page, source)
    context.close()
    for username, role, screens in (("bob", "curator", _curator_screens(world)), ("alice", "admin", _admin_screens(world))):
        page = login(browser, live_server.url, username, PASSWORD)
        for screen in screens:
            page.goto(f"{live_server.url}{screen.path}")
            page.locator(screen.ready).first.wait_for()
            results[f"{role}: {screen.name}"] = run_axe(page, source)
        page.context.close()
    with capsys.disabled():
        print("\n" + _report(results))
    failing = {name: blocking(violations) for name, violations in results.items() if blocking(violations)}
    assert not failing, "serious or critical axe violations:\n" + "\n".join(
        f"{name}:\n" + "\n".join(f"  {v}" for v in violations) for name, violations in failing.items()
    )


def _luminance(rgb: tuple[float, float, float]) -> float:
    def channel(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(fg: tuple[float, float, float], bg: tuple[float, float, float]) -> float:
    """WCAG 2's contrast ratio of two opaque sRGB colours."""
    light, dark = sorted((_luminance(fg), _luminance(bg)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def _over(top: list[float], under: tuple[float, float, float]) -> tuple[float, float, float]:
    """``top`` (r, g, b, alpha) painted over an opaque ``under``."""
    r, g, b, a = top
    return (r * a + under[0] * (1 - a), g * a + under[1] * (1 - a), b * a + under[2] * (1 - a))


# For each status's first mention: its text colour, its tint, and any tint over it (the selection's gradient), each
# [r, g, b, a]; the same for the type badge after it (drawn over the mention's tint). The card under it is white.
_HIGHLIGHTS_JS = """(statuses) => {
  const rgba = (css) => { const n = (css.match(/[\\d.]+/g) || []).map(Number); return n.length < 3 ? null : [n[0], n[1], n[2], n.length > 3 ? n[3] : 1]; };
  return Object.fromEntries(statuses.map((status) => {
    const mark = document.querySelector(`#document-text mark.mention.status-${status}`);
    if (!mark) return [status, null];
    const style = getComputedStyle(mark), badge = getComputedStyle(mark, '::after');
    return [status, {text: rgba(style.color), tint: rgba(style.backgroundColor), overlay: rgba(style.backgroundImage),
                     badgeText: mark.dataset.badge ? rgba(badge.color) : null, badgeTint: rgba(badge.backgroundColor)}];
  }));
}"""


def test_every_mention_status_highlight_keeps_its_text_at_aa_contrast(live_server, browser, world) -> None:  # type: ignore[no-untyped-def]
    page = login(browser, live_server.url, "bob", PASSWORD)
    page.goto(f"{live_server.url}/curate/demo/documents/{world['doc'].pk}/")
    page.locator("#panel .candidate").first.wait_for()
    found = page.evaluate(_HIGHLIGHTS_JS, STATUSES)
    assert [status for status, colours in found.items() if colours is None] == [], "a status has no mention on the page"
    ratios = {}
    for status, colours in found.items():
        tint = _over(colours["tint"], (255, 255, 255))
        if colours["overlay"]:
            tint = _over(colours["overlay"], tint)
        ratios[status] = round(contrast(_over(colours["text"], tint), tint), 2)
        if colours["badgeText"]:
            badge = _over(colours["badgeTint"], tint)
            ratios[f"{status} type badge"] = round(contrast(_over(colours["badgeText"], badge), badge), 2)
    print("mention highlight contrast:", ratios)
    assert {name: ratio for name, ratio in ratios.items() if ratio < 4.5} == {}, ratios


def _tab_to(page, selector: str, limit: int = 120) -> None:  # type: ignore[no-untyped-def]
    """Press Tab until the focused element matches ``selector``: focus reached by the keyboard, as a user would."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("(s) => document.activeElement && document.activeElement.matches(s)", selector):
            return
    raise AssertionError(f"{limit} presses of Tab never reached {selector}")


_RING_JS = """(row) => {
  const el = document.activeElement, style = getComputedStyle(el);
  const box = row ? getComputedStyle(el.closest(row)) : null;
  return {visible: el.matches(':focus-visible'), outlineStyle: style.outlineStyle, outlineWidth: parseFloat(style.outlineWidth),
          boxShadow: style.boxShadow, rowShadow: box ? box.boxShadow : null};
}"""


def test_keyboard_focus_is_visible_on_links_buttons_fields_mentions_and_candidates(live_server, browser, world) -> None:  # type: ignore[no-untyped-def]
    page = login(browser, live_server.url, "bob", PASSWORD)
    page.goto(f"{live_server.url}/curate/demo/documents/{world['doc'].pk}/")
    page.locator("#panel .candidate").first.wait_for()
    page.locator("body").focus()
    for selector, row in ((".mainnav a", None), (".account button", None), ("#document-text mark.mention", None),
                          ("#concept-search", None), ("#panel .candidate button", ".candidate")):
        _tab_to(page, selector)
        ring = page.evaluate(_RING_JS, row)
        assert ring["visible"], f"{selector}: focused by Tab but not :focus-visible"
        # The two-tone ring: a dark outline of 2 px or more with the amber box-shadow inside it.
        assert ring["outlineStyle"] != "none" and ring["outlineWidth"] >= 2, (selector, ring)
        assert ring["boxShadow"] != "none", (selector, ring)
        if row:
            assert ring["rowShadow"] not in (None, "none"), f"the {row} row of a focused button does not stand out: {ring}"
