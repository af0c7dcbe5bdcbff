"""The release diff's "curated links to review" list keeps a project's documents from curators outside it (issue 41,
item 1: a listing of mentions that skipped the access rule)."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.integration.project_fixtures import make_user
from tests.integration.test_release_carry_over import _artifacts, releases  # noqa: F401 (fixtures)
from webapp.corpus.models import Collection
from webapp.projects.services.membership import create_project

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("covered", [[], ["doc1"]], ids=["whole-collection", "the-document-only"])
def test_a_non_member_does_not_see_the_projects_links_to_review(releases, alice, covered: list[str]) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    _, new, lost, _ = releases
    create_project(by=alice, slug="notes-team", title="Notes team", collection=Collection.objects.get(slug="notes"),
                   document_ids=covered)
    outsider = Client()
    outsider.force_login(make_user("frank"))
    page = outsider.get("/dictionaries/medic/releases/")
    assert page.status_code == 200
    assert f'data-mention="{lost.pk}"' not in page.content.decode()
    admin = Client()
    admin.force_login(alice)
    assert f'data-mention="{lost.pk}"' in admin.get("/dictionaries/medic/releases/").content.decode()
