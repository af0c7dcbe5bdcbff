"""The first API: anonymous 401, curators read, only admins queue imports; tokens work for pipelines."""

from __future__ import annotations

from pathlib import Path

import pytest
from rest_framework.test import APIClient

from webapp.imports.models import ImportJob
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, Name

pytestmark = pytest.mark.django_db

API_PATHS = ["/api/", "/api/dictionaries/", "/api/concepts/", "/api/collections/", "/api/imports/"]


@pytest.fixture
def asthma(db):  # type: ignore[no-untyped-def]
    d = Dictionary.objects.create(slug="mini", title="Mini")
    v = DictionaryVersion.objects.create(dictionary=d, release="1", source_format="medic", checksum="x" * 64)
    c = Concept.objects.create(version=v, concept_id="MESH:D001249", preferred_name="Asthma")
    Name.objects.create(concept=c, text="Asthma", normalized="asthma", is_preferred=True)
    Name.objects.create(concept=c, text="Bronchial asthma", normalized="bronchial asthma")
    other = Concept.objects.create(version=v, concept_id="MESH:D006973", preferred_name="Hypertension")
    Name.objects.create(concept=other, text="Hypertension", normalized="hypertension", is_preferred=True)
    return c


@pytest.mark.parametrize("path", API_PATHS)
def test_anonymous_requests_get_401(path: str) -> None:
    response = APIClient().get(path)
    assert response.status_code == 401
    assert "Location" not in response  # a pipeline gets a status, never an HTML login page


@pytest.mark.parametrize("path", API_PATHS[1:4])
def test_a_user_without_a_role_gets_403(charlie, path: str) -> None:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(charlie)
    assert client.get(path).status_code == 403


def test_curator_searches_concepts_by_name(bob, asthma) -> None:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(bob)
    response = client.get("/api/concepts/", {"q": "bronchial asthmas", "dictionary": "mini"})
    assert response.status_code == 200
    results = response.json()
    results = results["results"] if isinstance(results, dict) else results
    assert results[0]["concept_id"] == "MESH:D001249"
    assert {"text": "Bronchial asthma", "source": "dictionary"} in results[0]["names"]


def test_concept_detail_takes_ids_with_colons(bob, asthma) -> None:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(bob)
    response = client.get("/api/concepts/MESH:D001249/")
    assert response.status_code == 200
    assert response.json()["preferred_name"] == "Asthma"


def test_token_authentication_for_pipelines(bob, asthma) -> None:  # type: ignore[no-untyped-def]
    from webapp.people.tokens import issue_token

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {issue_token(bob, 'pipeline').key}")
    assert client.get("/api/dictionaries/").status_code == 200
    client.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    assert client.get("/api/dictionaries/").status_code == 401


def test_curators_cannot_queue_imports(bob, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(bob)
    response = client.post("/api/imports/", {"kind": "dictionary", "path": str(tmp_path), "slug": "x"}, format="json")
    assert response.status_code == 403
    assert not ImportJob.objects.exists()


def test_admin_import_of_a_missing_file_is_refused_clearly(alice, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(alice)
    missing = tmp_path / "nope.tsv"
    response = client.post("/api/imports/", {"kind": "dictionary", "path": str(missing), "slug": "x"}, format="json")
    assert response.status_code == 400
    assert "is not a readable file" in response.json()["path"][0]
    assert not ImportJob.objects.exists()


def test_session_api_writes_need_csrf(alice, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(alice)
    path = tmp_path / "d.tsv"
    path.write_text("x")
    response = client.post("/api/imports/", {"kind": "dictionary", "path": str(path), "slug": "x"}, format="json")
    assert response.status_code == 403
    assert "CSRF" in response.json()["detail"]


def test_api_concept_search_ranks_as_the_curation_search(bob, asthma) -> None:  # type: ignore[no-untyped-def]
    """One search serves the UI and the API: same concepts, same order, ids included."""
    from webapp.vocab.selectors import search_concepts

    version = asthma.version
    Name.objects.create(concept=Concept.objects.get(concept_id="MESH:D006973"), text="Asthmatic hypertension", normalized="asthmatic hypertension")
    client = APIClient()
    client.force_authenticate(bob)
    for q in ("asthma", "bronchial asthmas", "MESH:D006973"):
        response = client.get("/api/concepts/", {"q": q, "dictionary": "mini"})
        results = response.json()
        results = results["results"] if isinstance(results, dict) else results
        expected = [hit.concept.concept_id for hit in search_concepts(version, q, limit=50)]
        assert [r["concept_id"] for r in results] == expected, q
        assert expected, q
    assert client.get("/api/concepts/", {"q": "?!"}).status_code == 400
