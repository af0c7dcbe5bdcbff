"""Collections and documents over HTTP: create, upload a file, list and filter, detail, export."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from bioc import biocjson, biocxml
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.imports.models import ImportJob
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, HierarchyEdge, Name

pytestmark = pytest.mark.django_db

TITLE = "Asthma in 𝛼-cohorts"  # 𝛼 is one character (two UTF-16 units, four UTF-8 bytes)
TEXT = f"{TITLE} Bronchial asthma and gout."
B, G = TEXT.index("Bronchial"), TEXT.index("gout")
PUBTATOR = (
    f"7|t|{TITLE}\n7|a|Bronchial asthma and gout.\n"
    f"7\t0\t6\tAsthma\tDisease\tD001249\n7\t{B}\t{B + 16}\tBronchial asthma\tDisease\tD001249\n7\t{G}\t{G + 4}\tgout\tDisease\t-1\n\n"
)


@pytest.fixture
def mini(db) -> Dictionary:  # type: ignore[no-untyped-def]
    d = Dictionary.objects.create(slug="mini", title="Mini")
    v = DictionaryVersion.objects.create(dictionary=d, release="1", source_format="demo", checksum="q" * 64)
    asthma = Concept.objects.create(version=v, concept_id="MESH:D001249", preferred_name="Asthma")
    Name.objects.create(concept=asthma, text="Asthma", normalized="asthma", is_preferred=True)
    parent = Concept.objects.create(version=v, concept_id="MESH:D012140", preferred_name="Respiratory Tract Diseases")
    HierarchyEdge.objects.create(version=v, child=asthma, parent=parent)
    return d


@pytest.fixture
def alice_api(alice) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(alice)
    return client


def _upload(client: APIClient, slug: str, name: str, content: bytes, fmt: str, **extra: str):  # type: ignore[no-untyped-def]
    return client.post(f"/api/collections/{slug}/upload/", {"file": SimpleUploadedFile(name, content), "format": fmt, **extra}, format="multipart")


def test_admin_creates_a_collection_uploads_pubtator_and_exports_bioc(alice_api: APIClient, mini: Dictionary) -> None:
    created = alice_api.post("/api/collections/", {"slug": "ncbi", "title": "NCBI", "dictionary": "mini"}, format="json")
    assert created.status_code == 201
    assert created.json() == {"slug": "ncbi", "title": "NCBI", "description": "", "dictionary": "mini", "has_gold": False,
                              "detection": "matcher+tagger", "auto_accept_threshold": None, "document_count": 0}

    response = _upload(alice_api, "ncbi", "small.txt", PUBTATOR.encode(), "pubtator")
    assert response.status_code == 201, response.json()
    assert (response.json()["documents"], response.json()["mentions"], response.json()["resolved_links"]) == (1, 3, 2)
    again = _upload(alice_api, "ncbi", "small.txt", PUBTATOR.encode(), "pubtator")
    assert (again.status_code, again.json()["skipped_documents"]) == (200, 1)

    export = alice_api.get("/api/collections/ncbi/export/", {"as": "bioc-xml"})
    assert export.status_code == 200
    assert export["Content-Type"].startswith("application/xml")
    assert export["Content-Disposition"] == 'attachment; filename="ncbi.xml"'
    collection = biocxml.loads(export.getvalue().decode())
    title, abstract = collection.documents[0].passages
    assert (title.offset, title.text, abstract.offset) == (0, "Asthma in 𝛼-cohorts", len("Asthma in 𝛼-cohorts") + 1)
    anns = [(a.locations[0].offset, a.text, a.infons.get("identifier")) for p in (title, abstract) for a in p.annotations]
    # The ids in the dictionary's form (the file wrote them bare); ?ids=source gives them as the file wrote them.
    assert anns == [(0, "Asthma", "MESH:D001249"), (B, "Bronchial asthma", "MESH:D001249"), (G, "gout", "-1")]


def test_upload_errors_name_the_file_and_line_and_write_nothing(alice_api: APIClient) -> None:
    Collection.objects.create(slug="c", title="C")
    bad = PUBTATOR.replace(f"{B}\t{B + 16}", f"{B + 1}\t{B + 17}").encode()
    response = _upload(alice_api, "c", "bad.txt", bad, "pubtator")
    assert response.status_code == 400
    assert response.json()["detail"].startswith(f"bad.txt:4: span {B + 1}-{B + 17}")
    assert not Document.objects.exists()


def test_brat_zip_upload(alice_api: APIClient) -> None:
    Collection.objects.create(slug="c", title="C")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("d1.txt", "Gout.")
        z.writestr("d1.ann", "T1\tDisease 0 4\tGout\nN1\tReference T1 MESH:D006073\tGout\n")
    response = _upload(alice_api, "c", "standoff.zip", buffer.getvalue(), "brat")
    assert response.status_code == 201
    assert Link.objects.get().concept_ref == "MESH:D006073"


def test_document_create_with_mentions_and_detail(alice_api: APIClient, mini: Dictionary) -> None:
    Collection.objects.create(slug="c", title="C", dictionary=mini)
    body = {
        "collection": "c", "external_id": "d1", "title": "Asthma", "text": "Asthma and gout.",
        "mentions": [
            {"start": 0, "end": 6, "mention_type": "Disease", "links": [{"concept_id": "D001249"}]},
            {"start": 11, "end": 15, "links": [{"nil": True}]},
        ],
    }
    response = alice_api.post("/api/documents/", body, format="json")
    assert response.status_code == 201, response.json()
    doc = response.json()
    assert (doc["external_id"], doc["text"], doc["mention_count"]) == ("d1", "Asthma and gout.", 2)
    first = doc["mentions"][0]
    assert (first["text"], first["links"][0]["concept_id"], first["links"][0]["concept_ref"]) == ("Asthma", "MESH:D001249", "D001249")
    assert doc["mentions"][1]["links"][0]["nil"] is True
    duplicate = alice_api.post("/api/documents/", body, format="json")
    assert duplicate.status_code == 400
    assert "already has a document 'd1'" in duplicate.json()["external_id"][0]
    outside = alice_api.post("/api/documents/", {**body, "external_id": "d2", "mentions": [{"start": 3, "end": 99}]}, format="json")
    assert outside.status_code == 400
    assert "outside the text" in json.dumps(outside.json())


def test_document_list_filters_and_per_document_export(bob, mini: Dictionary) -> None:  # type: ignore[no-untyped-def]
    a = Collection.objects.create(slug="a", title="A")
    b = Collection.objects.create(slug="b", title="B")
    d1 = Document.objects.create(collection=a, external_id="1", text="Gout.")
    Document.objects.create(collection=b, external_id="2", text="Asthma.")
    Mention.objects.create(document=d1, start=0, end=4, text="Gout")
    client = APIClient()
    client.force_authenticate(bob)
    listed = client.get("/api/documents/", {"collection": "a"}).json()
    assert [(d["external_id"], d["mention_count"]) for d in listed["results"]] == [("1", 1)]
    export = client.get(f"/api/documents/{d1.pk}/export/", {"as": "bioc-json"})
    assert export.status_code == 200 and export["Content-Type"] == "application/json"
    assert biocjson.loads(export.content.decode()).documents[0].passages[0].annotations[0].text == "Gout"
    assert client.get(f"/api/documents/{d1.pk}/export/", {"as": "csv"}).status_code == 400


def test_concept_detail_has_names_types_parents_and_children(bob, mini: Dictionary) -> None:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(bob)
    asthma = client.get("/api/concepts/MESH:D001249/").json()
    assert asthma["parents"] == [{"concept_id": "MESH:D012140", "preferred_name": "Respiratory Tract Diseases"}]
    assert asthma["children"] == [] and asthma["names"] == [{"text": "Asthma", "source": "dictionary"}]
    parent = client.get("/api/concepts/MESH:D012140/").json()
    assert parent["children"] == [{"concept_id": "MESH:D001249", "preferred_name": "Asthma"}]
    assert client.get("/api/concepts/MESH:NOPE/").status_code == 404


def test_dictionary_upload_queues_an_import_job(alice_api: APIClient, settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings.ARTIFACT_ROOT = tmp_path
    upload = SimpleUploadedFile("medic.txt", b"D001249||Asthma|Bronchial asthma\n")
    response = alice_api.post("/api/dictionaries/upload/", {"file": upload, "slug": "medic", "title": "MEDIC"}, format="multipart")
    assert response.status_code == 202
    job = ImportJob.objects.get()
    assert (job.import_kind, job.params) == ("dictionary", {"dictionary_slug": "medic", "title": "MEDIC", "release": None})
    assert job.path.startswith(str(tmp_path / "uploads")) and job.path.endswith("/medic.txt")


def test_openapi_schema_and_reference_pages(bob) -> None:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(bob)
    schema = client.get("/api/schema/", {"format": "json"}).json()
    assert schema["openapi"].startswith("3.")
    for path in ["/api/link", "/api/mentions/{id}/decision/", "/api/collections/{slug}/export/", "/api/documents/"]:
        assert path in schema["paths"], path
    page = client.get("/api/docs/")
    assert page.status_code == 200 and b"swagger-ui" in page.content


def test_unknown_api_paths_are_json_404(bob) -> None:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(bob)
    response = client.get("/api/concepts/a/b/")
    assert response.status_code == 404 and response.json() == {"detail": "no such API endpoint"}
    assert APIClient().get("/api/nothing/").status_code == 401


def test_a_body_over_the_request_limit_is_a_json_400_naming_it(alice_api: APIClient, settings) -> None:  # type: ignore[no-untyped-def]
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    # A form body (POST /api/documents/ takes JSON only: a form cannot carry its mentions).
    response = alice_api.post("/api/collections/", f"slug=big&title={'a' * 2000}",
                              content_type="application/x-www-form-urlencoded")
    assert response.status_code == 400 and response["Content-Type"] == "application/json"
    assert "over the 1,000-byte limit (DATA_UPLOAD_MAX_MEMORY_SIZE)" in response.json()["detail"]
    assert not Collection.objects.filter(slug="big").exists()
    response = alice_api.post("/api/documents/", f"collection=notes&text={'a' * 2000}",
                              content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415 and not Document.objects.exists()
