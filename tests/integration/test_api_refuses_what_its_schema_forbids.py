"""The API refuses what its own schema forbids, with a 400 naming the field (or a 415 for a body the operation does
not take), instead of answering 2xx with defaults: ``page``/``page_size`` given as a word, an array, zero or twice;
a collection's ``dictionary`` given as ""; a multipart POST /api/documents/ (its mentions were dropped); a
dictionary upload's slug "null" and UMLS filters that are not abbreviations. The schema says the same (bounds, JSON
only). test_schemathesis.py checks every operation this way (schemathesis' negative_data_rejection)."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from webapp.corpus.models import Collection, Document
from webapp.imports.models import ImportJob

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice_api(alice) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(alice)
    return client


@pytest.fixture
def collections() -> None:
    for slug in ("a", "b", "c"):
        Collection.objects.create(slug=slug, title=slug.upper())


@pytest.mark.parametrize(
    ("query", "field", "message"),
    [
        ("page=abc", "page", "must be a positive integer (found 'abc')"),
        ("page=0", "page", "must be a positive integer (found '0')"),
        ("page=1&page=2", "page", "given 2 times; give it once"),
        ("page_size=abc", "page_size", "must be a positive integer (found 'abc')"),
        ("page_size=-5", "page_size", "must be a positive integer (found '-5')"),
        ("page_size=1&page_size=2", "page_size", "given 2 times; give it once"),
        ("page_size=501", "page_size", "at most 500 (found 501)"),
    ],
)
def test_a_page_or_page_size_that_is_no_positive_integer_is_a_400_naming_it(  # type: ignore[no-untyped-def]
    alice_api: APIClient, collections, query: str, field: str, message: str
) -> None:
    for url in ("/api/collections/", "/api/imports/", "/api/dictionaries/"):  # the shared and the default pagination
        response = alice_api.get(f"{url}?{query}")
        assert response.status_code == 400, (url, response.content)
        assert response.json() == {field: [message]}


def test_a_good_page_is_served_and_the_schema_gives_the_bounds(alice_api: APIClient, collections) -> None:  # type: ignore[no-untyped-def]
    body = alice_api.get("/api/collections/?page=2&page_size=2").json()
    assert [c["slug"] for c in body["results"]] == ["c"]
    assert alice_api.get("/api/collections/?page=9&page_size=2").status_code == 404  # past the last page
    schema = alice_api.get("/api/schema/?format=json").json()
    parameters = {p["name"]: p["schema"] for p in schema["paths"]["/api/collections/"]["get"]["parameters"]}
    assert parameters["page"] == {"type": "integer", "minimum": 1}
    assert parameters["page_size"] == {"type": "integer", "minimum": 1, "maximum": 500}


def test_a_collection_with_dictionary_blank_is_refused_null_is_none(alice_api: APIClient) -> None:
    response = alice_api.post("/api/collections/", {"slug": "n", "title": "N", "dictionary": ""}, format="json")
    assert response.status_code == 400
    assert response.json() == {"dictionary": ["may not be blank: give a slug, or null for none"]}
    assert not Collection.objects.exists()
    response = alice_api.post("/api/collections/", {"slug": "n", "title": "N", "dictionary": None}, format="json")
    assert response.status_code == 201 and response.json()["dictionary"] is None


def test_a_document_is_posted_as_json_only_so_its_mentions_are_never_dropped(alice_api: APIClient, collections) -> None:  # type: ignore[no-untyped-def]
    mentions = [{"start": 0, "end": 4, "links": [{"nil": True}]}]
    form = {"collection": "a", "external_id": "1", "text": "Gout.", "mentions": json.dumps(mentions)}
    response = alice_api.post("/api/documents/", form, format="multipart")
    assert response.status_code == 415
    assert not Document.objects.exists()
    response = alice_api.post("/api/documents/", {**form, "mentions": mentions}, format="json")
    assert response.status_code == 201, response.content
    assert len(response.json()["mentions"]) == 1
    schema = alice_api.get("/api/schema/?format=json").json()
    assert list(schema["paths"]["/api/documents/"]["post"]["requestBody"]["content"]) == ["application/json"]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("slug", "null", "'null' is reserved (a form cannot tell it from JSON's null)"),
        ("slug", "True", "'True' is reserved (a form cannot tell it from JSON's true)"),
        ("sources", "true", "expected sources as upper-case UMLS abbreviations separated by commas"),
        ("languages", "5", "expected languages as upper-case UMLS abbreviations separated by commas"),
    ],
)
def test_a_dictionary_upload_refuses_json_literals_and_bad_umls_filters(  # type: ignore[no-untyped-def]
    alice_api: APIClient, settings, tmp_path, field: str, value: str, message: str
) -> None:
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    body = {"file": SimpleUploadedFile("medic.tsv", b"Asthma\tMESH:D001249\t\t\t\t\t\t\t\n"), "slug": "medic", field: value}
    response = alice_api.post("/api/dictionaries/upload/", body, format="multipart")
    assert response.status_code == 400
    assert response.json() == {field: [message]}
    assert not ImportJob.objects.exists()


def test_umls_filters_as_the_help_text_writes_them_are_taken(alice_api: APIClient, settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    body = {"file": SimpleUploadedFile("umls.zip", b"PK\x05\x06" + b"\x00" * 18), "slug": "umls",
            "sources": "MSH, SNOMEDCT_US,HPO", "languages": "ENG"}
    response = alice_api.post("/api/dictionaries/upload/", body, format="multipart")
    assert response.status_code in (202, 503), response.content  # queued (or the test's broker is away): not refused


@pytest.mark.parametrize(
    ("query", "field", "message"),
    [
        ("status=", "status", "may not be blank: give a value, or leave the parameter out"),
        ("status=suggested&status=accepted", "status", "given 2 times; give it once"),
        ("document=", "document", "may not be blank: give a value, or leave the parameter out"),
        ("origin=gold&origin=curator", "origin", "given 2 times; give it once"),
    ],
)
def test_a_filter_given_blank_or_twice_is_a_400_naming_it(alice_api: APIClient, query: str, field: str, message: str) -> None:
    for url in ("/api/mentions/", "/api/links/"):
        response = alice_api.get(f"{url}?{query}")
        assert response.status_code == 400, (url, response.content)
        assert response.json() == {field: [message]}


def test_a_text_filter_may_be_empty_as_its_schema_allows(alice_api: APIClient) -> None:
    assert alice_api.get("/api/mentions/?mention_type=&status=suggested").status_code == 200


def test_a_title_over_its_length_is_refused_as_sent_not_as_trimmed(alice_api: APIClient) -> None:
    response = alice_api.post("/api/collections/", {"slug": "t", "title": "    " + "x" * 200}, format="json")
    assert response.status_code == 400
    assert response.json() == {"title": ["Ensure this field has no more than 200 characters."]}


@pytest.mark.parametrize(
    ("url", "field"), [("/api/collections/a/export/?suggestions=abc", "suggestions"), ("/api/links/?nil=5", "nil")]
)
def test_a_yes_no_parameter_is_true_or_false(alice_api: APIClient, collections, url: str, field: str) -> None:  # type: ignore[no-untyped-def]
    response = alice_api.get(url)
    assert response.status_code == 400
    assert response.json() == {field: [f"must be true or false (found {url.rsplit('=', 1)[1]!r})"]}
    assert alice_api.get(url.rsplit("=", 1)[0] + "=true").status_code == 200


def test_a_form_field_given_twice_is_refused(alice_api: APIClient, settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    body = {"file": SimpleUploadedFile("umls.zip", b"PK\x05\x06" + b"\x00" * 18), "slug": "umls", "languages": ["ENG", "FRE"]}
    response = alice_api.post("/api/dictionaries/upload/", body, format="multipart")
    assert response.status_code == 400
    assert response.json() == {"languages": ["given 2 times; give it once"]}
    assert not ImportJob.objects.exists()


def test_a_form_with_dictionary_blank_is_refused_too(alice_api: APIClient) -> None:
    response = alice_api.post("/api/collections/", "slug=f&title=F&dictionary=", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 400
    assert response.json() == {"dictionary": ["may not be blank: give a slug, or null for none"]}
    assert not Collection.objects.exists()
