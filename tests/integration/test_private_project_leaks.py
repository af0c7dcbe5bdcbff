"""Issue 43's twelve leaks, one regression case each: a crawl found four training pages showing a private project's
collection to three users outside it (two curators who are not its members and an annotator of another project).

- the comparison matrix (``/training/compare/?dictionary=``) listed the collection as a column with its figures;
- a cell of it (``/training/compare/indexes/<id>/collections/<slug>/``) and its changed mentions (``.../changes/``);
- the collection's linking note (``/training/collections/<slug>/linking/``).

Each case asks the page as each outsider (refused, or for the matrix no column of the collection) and as the
project's annotator, who must see what the outsiders may not: the fixture (the route walk's) has an evaluation of
the private collection, so a page that forgot the access rule would show its figures here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.test import Client

from tests.integration.project_fixtures import demo_collection, make_user  # noqa: F401 (fixture)
from tests.integration.test_route_walk import MARKERS, SECRET_SLUG, SECRET_TITLE, World, world  # noqa: F401 (fixture)

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

NON_MEMBERS = ("frank", "ivan", "gina")  # two curators outside the project, an annotator of another project


@dataclass(frozen=True)
class Leak:
    url: Callable[[World], str]
    shown_to_member: tuple[str, ...]  # what the project's annotator reads there (empty: the page is a status only)


def _cell(w: World) -> str:
    return f"/training/compare/indexes/{w.index.pk}/collections/{w.private.slug}/"


LEAKS = {
    "compare-matrix": Leak(lambda w: f"/training/compare/?dictionary={w.dictionary.slug}", (SECRET_TITLE, "Acc@1")),
    "compare-cell": Leak(_cell, ("Acc@1", "MRR")),
    "compare-changes": Leak(lambda w: _cell(w) + "changes/", (SECRET_TITLE,)),
    "collection-linking-note": Leak(lambda w: f"/training/collections/{w.private.slug}/linking/", ()),
}


def _get(user: object, url: str) -> tuple[int, str]:
    client = Client()
    client.force_login(user)
    response = client.get(url, headers={"HX-Request": "true"})
    return response.status_code, response.content.decode()


@pytest.mark.parametrize("leak", LEAKS)
def test_a_leak_of_issue_43_stays_closed(world: World, leak: str) -> None:  # noqa: F811
    users = {**world.users, "ivan": make_user("ivan")}
    url = LEAKS[leak].url(world)
    status, body = _get(users["bob"], url)
    assert status in (200, 286), f"the project's annotator gets {status} on {url}"
    for shown in LEAKS[leak].shown_to_member:
        assert shown in body, f"{url} does not show {shown!r} to the project's annotator: the case would prove nothing"
    failures = []
    for persona in NON_MEMBERS:
        status, body = _get(users[persona], url)
        leaked = [marker for marker in MARKERS if marker.lower() in body.lower()]
        if leak == "compare-matrix":
            # The page is every curator's; the private collection is not one of its columns.
            if status != 200 or leaked:
                failures.append(f"{persona}: {status}, shows {leaked}")
        elif status != 403 or "not a member" not in body or "Acc@1" in body:
            failures.append(f"{persona}: {status}, not refused as the collection's own page refuses it")
    assert not failures, f"{url} leaks the private collection ({leak}):\n" + "\n".join(failures)
    assert SECRET_SLUG == world.private.slug
