"""/help/ serves the documentation site the app's "?" links open (webapp/core/help.py): built by the real
``mkdocs build`` into a folder of the test's, read by signed-in people only, a folder's address its index page, and
nothing outside the site; before it is built, a page that says how to build it."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client

from webapp.core.help import build_site, is_built

pytestmark = pytest.mark.django_db


@pytest.fixture
def site(settings, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    settings.DOCS_SITE_DIR = tmp_path / "site"
    return settings.DOCS_SITE_DIR  # type: ignore[no-any-return]


@pytest.fixture
def signed_in(django_user_model) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(django_user_model.objects.create_user("reader", password="pw-reader-1"))
    return client


def test_before_the_site_is_built_the_page_says_how_to_build_it(site: Path, signed_in: Client) -> None:
    assert not is_built()
    response = signed_in.get("/help/admin-runs/")
    assert response.status_code == 200
    assert "has not been built on this server yet" in response.content.decode()
    assert "scripts/docs build" in response.content.decode()


def test_the_built_site_is_served_to_signed_in_people(site: Path, signed_in: Client) -> None:
    assert build_site(), "mkdocs build failed"
    page = signed_in.get("/help/admin-runs/")
    assert page.status_code == 200
    text = b"".join(page.streaming_content).decode()  # type: ignore[attr-defined]
    assert 'id="the-start-form"' in text  # the run form's "?" lands on this heading
    assert signed_in.get("/help/").status_code == 200
    assert signed_in.get("/help/no-such-page/").status_code == 404
    assert signed_in.get("/help/../manage.py").status_code == 404
    assert signed_in.get("/help/%2e%2e/%2e%2e/manage.py").status_code == 404


def test_anonymous_visitors_are_sent_to_log_in(site: Path) -> None:
    response = Client().get("/help/admin-runs/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_the_question_marks_point_at_the_apps_own_help(settings) -> None:  # type: ignore[no-untyped-def]
    from webapp.core.templatetags.docs_links import docs_url

    assert settings.DOCS_URL == "/help/"
    assert docs_url("admin-runs", "the-start-form") == "/help/admin-runs/#the-start-form"
