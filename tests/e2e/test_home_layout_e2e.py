"""The home page at 1440 px with a project (issue #46): no card's table is cut (the Dictionaries table kept its
names column, the Collections table its decided column and progress bars only by scrolling sideways)."""

from __future__ import annotations

from tests.conftest import PASSWORD
from tests.e2e.conftest import login


def test_the_home_cards_show_their_whole_tables(live_server, browser, demo_collection, alice, screenshots) -> None:  # type: ignore[no-untyped-def]
    from webapp.projects.models import Member, Project

    project = Project.objects.create(slug="ncbi-double", title="NCBI disease, double annotation", collection=demo_collection,
                                     created_by=alice)
    Member.objects.create(project=project, user=alice, role=Member.Role.MANAGER)
    page = login(browser, live_server.url, "alice", PASSWORD)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{live_server.url}/")
    wraps = page.locator(".home-grid .table-wrap")
    assert wraps.count() == 3
    cut = page.evaluate("""() => [...document.querySelectorAll('.home-grid .table-wrap')]
        .filter(w => w.scrollWidth > w.clientWidth + 1).map(w => w.closest('section').id || w.closest('section').getAttribute('aria-labelledby'))""")
    assert cut == []
    assert page.locator("#home-collections").count() == 1
    assert page.locator(".home-grid progress").first.is_visible()
    page.screenshot(path=str(screenshots / "home-1440.png"))
