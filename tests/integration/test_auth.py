"""Who gets in where: anonymous visitors go to the login page, the API answers 401/403, roles gate the data."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import User
from django.test import Client
from pytest_django.asserts import assertContains

from webapp.corpus.models import Collection, Document
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion

pytestmark = pytest.mark.django_db


@pytest.fixture
def pages(db) -> list[str]:  # type: ignore[no-untyped-def]
    """Every browser page, with the objects it needs."""
    dictionary = Dictionary.objects.create(slug="medic", title="MEDIC")
    version = DictionaryVersion.objects.create(dictionary=dictionary, release="1", source_format="medic", checksum="c" * 64)
    Concept.objects.create(version=version, concept_id="MESH:D001943", preferred_name="Breast Neoplasms")
    collection = Collection.objects.create(slug="dev", title="Dev")
    doc = Document.objects.create(collection=collection, external_id="1", text="Some text.")
    return [
        "/",
        "/dictionaries/",
        "/dictionaries/medic/",
        "/dictionaries/medic/?q=breast",
        "/dictionaries/medic/search/?q=breast",
        "/dictionaries/medic/concepts/MESH:D001943/",
        "/collections/",
        "/collections/dev/",
        f"/collections/dev/documents/{doc.pk}/",
        "/admin/",
    ]


def test_anonymous_visitors_are_sent_to_login_with_next(client: Client, pages: list[str]) -> None:
    for path in pages:
        response = client.get(path)
        assert response.status_code == 302, path
        location = urlsplit(response["Location"])
        assert location.path == "/accounts/login/", path
        assert parse_qs(location.query) == {"next": [path]}, path


def test_every_page_renders_for_a_curator(bob_client: Client, pages: list[str]) -> None:
    for path in pages[:-1]:
        assert bob_client.get(path).status_code == 200, path


def test_an_account_without_a_role_sees_no_data(charlie: User, client: Client, pages: list[str]) -> None:
    client.force_login(charlie)
    home = client.get("/")
    assertContains(home, "Your account has no role yet")
    for path in pages[1:-1]:
        assert client.get(path).status_code == 403, path


def test_login_page_is_open_and_labelled(client: Client) -> None:
    response = client.get("/accounts/login/?next=/collections/")
    assert response.status_code == 200
    assertContains(response, '<label for="id_username">Username</label>', html=True)
    assertContains(response, '<label for="id_password">Password</label>', html=True)
    assertContains(response, '<input type="hidden" name="next" value="/collections/">', html=True)
    assertContains(response, 'name="csrfmiddlewaretoken"')


def test_logging_in_returns_to_next(bob: User, client: Client) -> None:
    bob.set_password("a-long-test-password")
    bob.save()
    response = client.post("/accounts/login/", {"username": "bob", "password": "a-long-test-password", "next": "/collections/"})
    assert response.status_code == 302
    assert response["Location"] == "/collections/"


def test_wrong_password_shows_an_error(bob: User, client: Client) -> None:
    response = client.post("/accounts/login/", {"username": "bob", "password": "wrong"})
    assert response.status_code == 200
    assertContains(response, 'role="alert"')


def test_healthz_is_open(client: Client) -> None:
    response = client.get("/healthz")
    assert response.status_code in (200, 503)  # 503 where no Celery worker runs; never a login redirect
    assert response["Content-Type"] == "application/json"
    assert set(response.json()["checks"]) == {"database", "broker", "worker"}


def test_logout_is_post_only(bob_client: Client) -> None:
    assert bob_client.get("/accounts/logout/").status_code == 405
    assert bob_client.get("/").status_code == 200  # still logged in
    response = bob_client.post("/accounts/logout/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/"
    assert bob_client.get("/").status_code == 302


def test_logout_button_is_a_post_form_with_csrf(bob_client: Client) -> None:
    html = bob_client.get("/").content.decode()
    form = html[html.index('<form method="post" action="/accounts/logout/">') :]
    form = form[: form.index("</form>")]
    assert 'name="csrfmiddlewaretoken"' in form
    assert '<button type="submit" class="btn btn-ghost">Log out</button>' in form


def test_anonymous_api_request_is_refused_not_redirected(client: Client) -> None:
    response = client.get("/api/dictionaries/")
    assert response.status_code in (401, 403)
