"""Every endpoint for every persona: anonymous 401, no role 403, curators read and decide, admins import.

alice is an admin, bob a curator, charlie has an account without a role.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from linker.data import ConceptRecord
from linker.linker import Linker
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.imports.models import ImportJob
from webapp.linking.models import IndexVersion
from webapp.linking.registry import forget_all
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, Name

pytestmark = pytest.mark.django_db

READ, CURATE, ADMIN = "read", "curate", "admin"


@dataclass(frozen=True)
class World:
    document: Document
    mention: Mention
    link: Link
    job: ImportJob
    tmp: Path


@dataclass(frozen=True)
class Endpoint:
    method: str
    path: Callable[[World], str]
    needs: str  # READ: curators and admins; CURATE: curators and admins, writing; ADMIN: admins only
    body: Callable[[World], dict[str, Any]] | None = None
    multipart: bool = False


def _jsonl(world: World) -> dict[str, Any]:
    content = b'{"id": "u1", "text": "Asthma.", "mentions": [{"start": 0, "end": 6, "links": [{"concept_id": "MESH:D001249"}]}]}\n'
    return {"file": SimpleUploadedFile("docs.jsonl", content), "format": "jsonl"}


def _dictionary_file(world: World) -> dict[str, Any]:
    return {"file": SimpleUploadedFile("d.txt", b"D001249||Asthma|Bronchial asthma\n"), "slug": "uploaded"}


def _decision(world: World) -> dict[str, Any]:
    world.mention.refresh_from_db()
    return {"action": "accept", "updated_at": world.mention.updated_at.isoformat()}


def _import_request(world: World) -> dict[str, Any]:
    path = world.tmp / "d.tsv"
    path.write_text("D001249||Asthma\n")
    return {"kind": "dictionary", "path": str(path), "slug": "queued"}


ENDPOINTS: dict[str, Endpoint] = {
    "api-root": Endpoint("get", lambda w: "/api/", READ),
    "schema": Endpoint("get", lambda w: "/api/schema/", READ),
    "docs": Endpoint("get", lambda w: "/api/docs/", READ),
    "redoc": Endpoint("get", lambda w: "/api/redoc/", READ),
    "dictionary-list": Endpoint("get", lambda w: "/api/dictionaries/", READ),
    "dictionary-detail": Endpoint("get", lambda w: "/api/dictionaries/mini/", READ),
    "dictionary-upload": Endpoint("post", lambda w: "/api/dictionaries/upload/", ADMIN, _dictionary_file, multipart=True),
    "concept-search": Endpoint("get", lambda w: "/api/concepts/?q=asthma", READ),
    "concept-detail": Endpoint("get", lambda w: "/api/concepts/MESH:D001249/", READ),
    "collection-list": Endpoint("get", lambda w: "/api/collections/", READ),
    "collection-detail": Endpoint("get", lambda w: "/api/collections/c/", READ),
    "collection-create": Endpoint("post", lambda w: "/api/collections/", ADMIN, lambda w: {"slug": "new", "title": "New", "dictionary": "mini"}),
    "collection-upload": Endpoint("post", lambda w: "/api/collections/c/upload/", ADMIN, _jsonl, multipart=True),
    "collection-export": Endpoint("get", lambda w: "/api/collections/c/export/?as=bioc-xml", READ),
    "collection-documents": Endpoint("get", lambda w: "/api/collections/c/documents/?page_size=1", READ),
    "collection-documents-stream": Endpoint("get", lambda w: "/api/collections/c/documents/stream/?as=jsonl", READ),
    "document-list": Endpoint("get", lambda w: "/api/documents/?collection=c", READ),
    "document-detail": Endpoint("get", lambda w: f"/api/documents/{w.document.pk}/", READ),
    "document-create": Endpoint("post", lambda w: "/api/documents/", ADMIN, lambda w: {"collection": "c", "external_id": "new", "text": "Asthma."}),
    "document-export": Endpoint("get", lambda w: f"/api/documents/{w.document.pk}/export/?as=jsonl", READ),
    "mention-list": Endpoint("get", lambda w: "/api/mentions/?status=suggested", READ),
    "mention-detail": Endpoint("get", lambda w: f"/api/mentions/{w.mention.pk}/", READ),
    "mention-decision": Endpoint("post", lambda w: f"/api/mentions/{w.mention.pk}/decision/", CURATE, _decision),
    "link-list": Endpoint("get", lambda w: "/api/links/?origin=model", READ),
    "link-detail": Endpoint("get", lambda w: f"/api/links/{w.link.pk}/", READ),
    "link-text": Endpoint("post", lambda w: "/api/link", CURATE, lambda w: {"dictionary": "mini", "text": "Bronchial asthma."}),
    "import-list": Endpoint("get", lambda w: "/api/imports/", ADMIN),
    "import-detail": Endpoint("get", lambda w: f"/api/imports/{w.job.pk}/", ADMIN),
    "import-create": Endpoint("post", lambda w: "/api/imports/", ADMIN, _import_request),
}


@pytest.fixture(autouse=True)
def _test_settings(settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # 109 tests create personas; the production hasher's deliberate slowness is not what they test.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"  # dictionary uploads land here, not in the project's var/


@pytest.fixture(scope="session")
def index_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-concept sparse index, built once for the session."""
    folder = tmp_path_factory.mktemp("mini-index")
    Linker.build([ConceptRecord("MESH:D001249", "Asthma")], None).save(folder)
    return folder


@pytest.fixture
def world(db, tmp_path: Path, index_folder: Path) -> Iterator[World]:  # type: ignore[no-untyped-def]
    d = Dictionary.objects.create(slug="mini", title="Mini")
    v = DictionaryVersion.objects.create(dictionary=d, release="1", source_format="demo", checksum="p" * 64)
    asthma = Concept.objects.create(version=v, concept_id="MESH:D001249", preferred_name="Asthma")
    Name.objects.create(concept=asthma, text="Asthma", normalized="asthma", is_preferred=True)
    collection = Collection.objects.create(slug="c", title="C", dictionary=d)
    document = Document.objects.create(collection=collection, external_id="1", text="Bronchial asthma in adults.")
    mention = Mention.objects.create(document=document, start=0, end=16, text="Bronchial asthma", status=Mention.Status.SUGGESTED)
    link = Link.objects.create(mention=mention, concept=asthma, concept_ref=asthma.concept_id, origin=Link.Origin.MODEL, rank=1, score=1.0)
    job = ImportJob.objects.create(import_kind="dictionary", path="/x", params={})
    IndexVersion.objects.create(dictionary=d, dictionary_version=v, artifact_path=str(index_folder), state="active")
    forget_all()
    yield World(document, mention, link, job, tmp_path)
    forget_all()


def _call(client: APIClient, endpoint: Endpoint, world: World) -> int:
    body = endpoint.body(world) if endpoint.body else None
    kwargs: dict[str, Any] = {"format": "multipart" if endpoint.multipart else "json"} if body is not None else {}
    return getattr(client, endpoint.method)(endpoint.path(world), body, **kwargs).status_code


@pytest.mark.parametrize("name", ENDPOINTS)
def test_anonymous_gets_401(world: World, name: str) -> None:
    assert _call(APIClient(), ENDPOINTS[name], world) == 401


REFERENCE = ("api-root", "schema", "docs", "redoc")  # the API's index and reference pages: any signed-in user


@pytest.mark.parametrize("name", [n for n in ENDPOINTS if n not in REFERENCE])
def test_a_user_without_a_role_gets_403(world: World, charlie, name: str) -> None:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(charlie)
    assert _call(client, ENDPOINTS[name], world) == 403


@pytest.mark.parametrize("name", REFERENCE)
def test_the_api_reference_is_open_to_any_signed_in_user(world: World, charlie, name: str) -> None:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(charlie)
    assert _call(client, ENDPOINTS[name], world) == 200


@pytest.mark.parametrize("name", ENDPOINTS)
def test_curator_reads_and_decides_but_does_not_import(world: World, bob, name: str) -> None:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(bob)
    code = _call(client, ENDPOINTS[name], world)
    if ENDPOINTS[name].needs == ADMIN:
        assert code == 403
    else:
        assert 200 <= code < 300


@pytest.mark.parametrize("name", ENDPOINTS)
def test_admin_can_do_everything(world: World, alice, name: str) -> None:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(alice)
    assert 200 <= _call(client, ENDPOINTS[name], world) < 300


def test_a_token_is_traded_for_username_and_password(bob) -> None:  # type: ignore[no-untyped-def]
    from tests.conftest import PASSWORD

    response = APIClient().post("/api/auth/token/", {"username": "bob", "password": PASSWORD}, format="json")
    assert response.status_code == 200
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {response.json()['token']}")
    assert client.get("/api/mentions/").status_code == 200
    assert APIClient().post("/api/auth/token/", {"username": "bob", "password": "wrong"}, format="json").status_code == 400


def test_malformed_credentials_get_401_not_a_server_error(db) -> None:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token abc\x00def")
    assert client.get("/api/mentions/").status_code == 401
