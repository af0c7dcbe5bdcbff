"""The admins' import pages (a dictionary file, a file of documents, a plain text): admins only, every refusal by
the field at fault and never a 500, the task queue down said on the form, and nothing kept of a refused upload.
A queued import lands on the Imports page with its job highlighted; how a worker then runs it is the e2e test's."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone
from pytest_django.asserts import assertContains, assertNotContains

from webapp.corpus.formats.services import import_documents
from webapp.corpus.models import Collection, Document
from webapp.imports.models import ImportJob
from webapp.imports.queueing import ImportRefused, document_format
from webapp.vocab.models import Dictionary, DictionaryVersion

DICTIONARY_URL, DOCUMENTS_URL, TEXT_URL = "/imports/dictionary/", "/imports/documents/", "/imports/text/"
PAGES = (DICTIONARY_URL, DOCUMENTS_URL, TEXT_URL)
MEDIC = (
    "# Report created: 2024-05-01\n"
    "Asthma\tMESH:D001249\t\t\t\t\t\t\t\n"
    "Diabetes Mellitus\tMESH:D003920\t\t\t\t\t\t\t\n"
)
PUBTATOR = "1|t|Asthma in children.\n1|a|Asthma is common.\n1\t0\t6\tAsthma\tDisease\tD001249\n\n"
DOWN = "the task queue (Redis at redis://127.0.0.1:1/0) is not reachable; nothing was queued"


@pytest.fixture(autouse=True)
def artifacts(settings, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    return Path(settings.ARTIFACT_ROOT)


@pytest.fixture
def mini(db) -> Dictionary:  # type: ignore[no-untyped-def]
    dictionary = Dictionary.objects.create(slug="mini", title="Mini")
    DictionaryVersion.objects.create(dictionary=dictionary, release="1", source_format="medic", checksum="m" * 64)
    Collection.objects.create(slug="notes", title="Clinical notes", dictionary=dictionary)
    return dictionary


def uploads_left(root: Path) -> list[str]:
    found = (root / "uploads").rglob("*") if (root / "uploads").exists() else ()
    return sorted(str(p.relative_to(root / "uploads")) for p in found if p.is_file())


def field_error(response, field: str) -> str:  # type: ignore[no-untyped-def]
    """The error shown under a field (``id_<field>_error``), '' when there is none."""
    html = response.content.decode()
    marker = f'id="id_{field}_error" role="alert">'
    if marker not in html:
        return ""
    return html.split(marker, 1)[1].split("</div>", 1)[0]


def medic_file(name: str = "medic.tsv", text: str = MEDIC) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode())


# --- who may ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("url", PAGES)
def test_curators_and_accounts_without_a_role_get_403(client, bob, charlie, url: str) -> None:  # type: ignore[no-untyped-def]
    for user in (bob, charlie):
        client.force_login(user)
        assert client.get(url).status_code == 403
        assert client.post(url, {"new_slug": "x", "text": "Asthma."}).status_code == 403
    assert not ImportJob.objects.exists()


@pytest.mark.parametrize("url", PAGES)
def test_an_anonymous_visitor_is_sent_to_log_in(client, url: str) -> None:  # type: ignore[no-untyped-def]
    response = client.get(url)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize("url", PAGES)
def test_every_form_needs_its_csrf_token(alice, url: str) -> None:  # type: ignore[no-untyped-def]
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    page = client.get(url)
    assertContains(page, 'name="csrfmiddlewaretoken"')
    assert client.post(url, {"new_slug": "x", "text": "Asthma."}).status_code == 403
    assert not ImportJob.objects.exists()


def test_curators_see_no_link_to_the_import_pages(client, bob, alice, mini) -> None:  # type: ignore[no-untyped-def]
    pages = ("/", "/dictionaries/", "/collections/", "/collections/notes/")
    client.force_login(bob)
    for page in pages:
        for url in PAGES:
            assertNotContains(client.get(page), f'href="{url}')
    client.force_login(alice)
    assertContains(client.get("/dictionaries/"), f'href="{DICTIONARY_URL}"')
    assertContains(client.get("/collections/"), f'href="{DOCUMENTS_URL}"')
    assertContains(client.get("/collections/"), f'href="{TEXT_URL}"')
    assertContains(client.get("/collections/notes/"), f'href="{TEXT_URL}?collection=notes"')
    imports = client.get("/imports/")
    for url in PAGES:
        assertContains(imports, f'href="{url}"')


# --- queued ----------------------------------------------------------------------------------------------------


def test_a_dictionary_upload_is_queued_and_the_imports_page_highlights_it(alice_client, artifacts: Path) -> None:  # type: ignore[no-untyped-def]
    response = alice_client.post(DICTIONARY_URL, {"file": medic_file(), "new_slug": "medic", "title": "MEDIC",
                                                  "release": ""})

    job = ImportJob.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/imports/?job={job.pk}#import-job-{job.pk}"
    assert (job.import_kind, job.state) == (ImportJob.Kind.DICTIONARY, ImportJob.State.QUEUED)
    assert job.params == {"dictionary_slug": "medic", "title": "MEDIC", "release": None, "fmt": "medic"}
    assert Path(job.path).read_text() == MEDIC and Path(job.path).name == "medic.tsv"
    assert not Dictionary.objects.exists()  # the worker creates it

    page = alice_client.get(response["Location"])
    assertContains(page, f'id="import-job-{job.pk}" class="highlight" aria-current="true"')
    assertContains(page, f"medic.tsv is queued as import #{job.pk} into dictionary medic")
    assertContains(page, "waiting for a worker")
    assertContains(page, f'hx-get="/imports/?job={job.pk}"')  # the poll keeps the highlight


def test_a_new_release_of_an_existing_dictionary(alice_client, mini) -> None:  # type: ignore[no-untyped-def]
    assertContains(alice_client.get(f"{DICTIONARY_URL}?dictionary=mini"), '<option value="mini" selected>')
    response = alice_client.post(DICTIONARY_URL, {"file": medic_file("CTD_diseases.tsv"), "dictionary": "mini",
                                                  "release": "2024-05"})
    assert response.status_code == 302
    assert ImportJob.objects.get().params == {"dictionary_slug": "mini", "title": None, "release": "2024-05", "fmt": "medic"}


def test_documents_are_queued_in_the_format_told_from_the_file(alice_client, mini) -> None:  # type: ignore[no-untyped-def]
    response = alice_client.post(DOCUMENTS_URL, {"file": SimpleUploadedFile("train.txt", PUBTATOR.encode()),
                                                 "new_slug": "ncbi-train", "collection_title": "NCBI train",
                                                 "dictionary": "mini"})
    assert response.status_code == 302
    job = ImportJob.objects.get()
    assert job.params == {"collection_slug": "ncbi-train", "title": "NCBI train", "dictionary_slug": "mini",
                          "format": "pubtator"}
    assert not Collection.objects.filter(slug="ncbi-train").exists()


def test_documents_into_an_existing_collection_keep_its_title(alice_client, mini) -> None:  # type: ignore[no-untyped-def]
    line = json.dumps({"id": "n1", "text": "Asthma at night.", "mentions": []})
    response = alice_client.post(DOCUMENTS_URL, {"file": SimpleUploadedFile("more.jsonl", line.encode()),
                                                 "collection": "notes", "collection_title": "ignored", "format": ""})
    assert response.status_code == 302
    assert ImportJob.objects.get().params == {"collection_slug": "notes", "title": None, "dictionary_slug": None,
                                              "format": "jsonl"}


def test_a_pasted_text_becomes_one_document_without_mentions(alice_client, mini) -> None:  # type: ignore[no-untyped-def]
    text = "Night-time asthma in a 9-year-old.\r\nNo wheeze on examination."
    response = alice_client.post(TEXT_URL, {"collection": "notes", "document_title": "Note 1", "text": text})

    assert response.status_code == 302
    job = ImportJob.objects.get()
    assert job.params == {"collection_slug": "notes", "title": None, "dictionary_slug": None, "format": "jsonl"}
    # What the worker runs, run here: the document is in the collection, its line breaks as typed.
    params = dict(job.params)
    import_documents(job.path, params.pop("format"), **params)
    document = Document.objects.get(collection__slug="notes")
    assert (document.title, document.text) == ("Note 1", text.replace("\r\n", "\n"))
    assert document.external_id.startswith("text-") and not document.mentions.exists()


def test_a_text_file_into_a_new_collection_is_titled_by_its_name(alice_client, mini) -> None:  # type: ignore[no-untyped-def]
    response = alice_client.post(TEXT_URL, {"new_slug": "letters", "dictionary": "mini",
                                            "file": SimpleUploadedFile("discharge letter.txt", b"Fever.\n")})
    assert response.status_code == 302
    job = ImportJob.objects.get()
    assert job.params == {"collection_slug": "letters", "title": None, "dictionary_slug": "mini", "format": "jsonl"}
    record = json.loads(Path(job.path).read_text())
    assert (record["title"], record["text"], record["mentions"]) == ("discharge letter", "Fever.\n", [])


# --- refused on the form ---------------------------------------------------------------------------------------


def test_a_dictionary_form_without_a_file_or_a_slug_says_so_by_each_field(alice_client, artifacts: Path) -> None:  # type: ignore[no-untyped-def]
    response = alice_client.post(DICTIONARY_URL, {"title": "MEDIC"})

    assert response.status_code == 400
    assert field_error(response, "file") == "Choose a file."
    assert field_error(response, "new_slug") == "Give the new dictionary a slug, or choose an existing dictionary above."
    assertContains(response, 'name="file" data-max-bytes="100000000" autofocus', status_code=400)  # the first to fix
    assertContains(response, 'value="MEDIC"', status_code=400)  # what was typed stays
    assert not ImportJob.objects.exists() and uploads_left(artifacts) == []


def test_a_file_over_the_upload_limit_is_refused_with_the_limit(alice_client, settings, artifacts: Path) -> None:  # type: ignore[no-untyped-def]
    settings.IMPORT_MAX_UPLOAD_BYTES = 20
    response = alice_client.post(DICTIONARY_URL, {"file": medic_file(), "new_slug": "medic"})

    assert response.status_code == 400
    assert field_error(response, "file") == (
        f"medic.tsv is {len(MEDIC):,} bytes, over the 20-byte limit (IMPORT_MAX_UPLOAD_BYTES)")
    assert not ImportJob.objects.exists() and uploads_left(artifacts) == []


def test_a_dictionary_of_no_known_format_is_refused_and_not_kept(alice_client, artifacts: Path) -> None:  # type: ignore[no-untyped-def]
    response = alice_client.post(DICTIONARY_URL, {"file": medic_file("notes.txt", "Patient was seen today.\n"),
                                                  "new_slug": "notes"})

    assert response.status_code == 400
    assert field_error(response, "file") == (
        "notes.txt: cannot tell the dictionary format (expected MEDIC TSV, DNorm &#x27;||&#x27; text or OBO)")
    assert not ImportJob.objects.exists() and uploads_left(artifacts) == []


def test_a_slug_already_taken_is_refused(alice_client, mini) -> None:  # type: ignore[no-untyped-def]
    response = alice_client.post(DICTIONARY_URL, {"file": medic_file(), "new_slug": "mini"})
    assert field_error(response, "new_slug") == "A dictionary &#x27;mini&#x27; exists already: choose it above."
    response = alice_client.post(TEXT_URL, {"new_slug": "notes", "text": "Asthma."})
    assert field_error(response, "new_slug") == "A collection &#x27;notes&#x27; exists already: choose it above."
    response = alice_client.post(TEXT_URL, {"new_slug": "not a slug", "text": "Asthma."})
    assert "valid" in field_error(response, "new_slug")
    assert not ImportJob.objects.exists()
    # Typed, then an existing collection chosen: the hidden field is no reason to refuse.
    response = alice_client.post(TEXT_URL, {"collection": "notes", "new_slug": "not a slug", "text": "Asthma."})
    assert response.status_code == 302


def test_documents_of_no_known_format_are_refused_by_the_format_field(alice_client, mini, artifacts: Path) -> None:  # type: ignore[no-untyped-def]
    response = alice_client.post(DOCUMENTS_URL, {"file": SimpleUploadedFile("export.dat", b"hello"), "collection": "notes"})
    assert response.status_code == 400
    assert field_error(response, "format") == (
        "cannot tell the format of export.dat from its name or its first bytes: choose it")

    response = alice_client.post(DOCUMENTS_URL, {"file": SimpleUploadedFile("a.txt", b"x"), "collection": "notes",
                                                 "format": "word"})
    assert field_error(response, "format").startswith("Select a valid choice.")
    assert not ImportJob.objects.exists() and uploads_left(artifacts) == []

    # A .txt that is no PubTator is a plain text: one document, its mentions left to the detector.
    response = alice_client.post(DOCUMENTS_URL, {"file": SimpleUploadedFile("note.txt", b"Asthma at night.\n"),
                                                 "collection": "notes"})
    assert response.status_code == 302
    assert ImportJob.objects.get().params["format"] == "text"


@pytest.mark.parametrize(("data", "field", "message"), [
    ({"text": ""}, "text", "The text is empty: paste a text, or choose a file below."),
    ({"text": "  \r\n\t "}, "text", "The text is empty: paste a text, or choose a file below."),
    ({"text": "Asthma.", "file": SimpleUploadedFile("a.txt", b"Asthma.")}, "text", "Paste a text or choose a file, not both."),
    ({"file": SimpleUploadedFile("latin1.txt", "Ménière".encode("latin-1"))}, "file",
     "latin1.txt is not UTF-8 text (invalid continuation byte at byte 1)."),
    ({"file": SimpleUploadedFile("blank.txt", b"\n\n")}, "file", "blank.txt holds no text."),
    ({"file": SimpleUploadedFile("empty.txt", b"")}, "file", "The file is empty."),
])
def test_a_text_that_cannot_be_a_document_is_refused_by_its_field(alice_client, mini, artifacts: Path, data, field,  # type: ignore[no-untyped-def]
                                                                  message) -> None:
    response = alice_client.post(TEXT_URL, {"collection": "notes", **data})
    assert response.status_code == 400
    assert field_error(response, field) == message
    assert not ImportJob.objects.exists() and uploads_left(artifacts) == []


def test_a_text_over_the_document_limit_names_the_limit(alice_client, mini, settings) -> None:  # type: ignore[no-untyped-def]
    settings.IMPORT_MAX_DOCUMENT_CHARS = 10
    response = alice_client.post(TEXT_URL, {"collection": "notes", "text": "Asthma at night."})
    assert field_error(response, "text") == (
        "The text is 16 characters, over the 10-character limit (IMPORT_MAX_DOCUMENT_CHARS)")


def test_formats_are_told_from_names_then_bytes() -> None:
    assert document_format("CDR.PubTator.txt", b"123|t|Title\n") == "pubtator"
    assert document_format("corpus.xml", b"") == "bioc-xml"
    assert document_format("corpus.json", b"{}") == "bioc-json"
    assert document_format("docs.jsonl", b"") == "jsonl"
    assert document_format("brat.zip", b"") == "brat"
    assert document_format("download", b"PK\x03\x04...") == "brat"
    assert document_format("download", b'\xef\xbb\xbf{"id": "1", "text": "x"}\n{"id": "2"') == "jsonl"
    assert document_format("download", b'{\n  "source": "PubMed",\n  "documents": []}') == "bioc-json"
    assert document_format("download", b"  <?xml version='1.0'?><collection>") == "bioc-xml"
    assert document_format("download", b"8528200|t|Title\n") == "pubtator"
    with pytest.raises(ImportRefused):
        document_format("download", b"Just words.")


# --- the task queue down ---------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_task_queue_down_is_said_on_each_form_and_nothing_is_kept(alice_client, mini, dead_broker,  # type: ignore[no-untyped-def]
                                                                       artifacts: Path) -> None:
    posts = [
        (DICTIONARY_URL, {"file": medic_file(), "new_slug": "medic"}),
        (DOCUMENTS_URL, {"file": SimpleUploadedFile("train.txt", PUBTATOR.encode()), "new_slug": "ncbi"}),
        (TEXT_URL, {"new_slug": "pasted", "text": "Asthma at night."}),
    ]
    for url, data in posts:
        response = alice_client.post(url, data)
        assert response.status_code == 503, url
        assertContains(response, f'<div class="form-errors" role="alert" tabindex="-1" id="form-errors"><p>{DOWN}',
                       status_code=503)
    # Each job is failed with the reason (never "queued" for ever); no file, dictionary or collection is left.
    assert sorted(ImportJob.objects.values_list("state", flat=True)) == [ImportJob.State.FAILED] * 3
    assert all(m.startswith(DOWN) for m in ImportJob.objects.values_list("error", flat=True))
    assert uploads_left(artifacts) == []
    assert list(Dictionary.objects.values_list("slug", flat=True)) == ["mini"]
    assert list(Collection.objects.values_list("slug", flat=True)) == ["notes"]


# --- the Imports page and the collection page ------------------------------------------------------------------


def test_a_refused_upload_is_shown_by_its_own_name_and_line(alice_client, alice, artifacts: Path) -> None:  # type: ignore[no-untyped-def]
    folder = artifacts / "uploads" / ("a" * 32)
    folder.mkdir(parents=True)
    path = folder / "bad.txt"
    path.write_text(PUBTATOR)
    ImportJob.objects.create(
        import_kind=ImportJob.Kind.DOCUMENTS, path=str(path), params={"collection_slug": "ncbi"}, created_by=alice,
        state=ImportJob.State.FAILED, error=f"{path}:3: span 0-60 outside the document text (length 37)",
        started_at=timezone.now(), finished_at=timezone.now(),
    )
    page = alice_client.get("/imports/")
    assertContains(page, "bad.txt:3: span 0-60 outside the document text (length 37)")
    assertContains(page, "uploaded by alice")
    assertNotContains(page, str(folder))
    assertContains(page, 'href="/imports/documents/?collection=ncbi&amp;new_slug=ncbi">Upload a corrected file</a>')


def test_a_pasted_text_is_named_by_its_document_and_an_imported_dictionary_points_to_its_index(  # type: ignore[no-untyped-def]
    alice_client, alice, mini
) -> None:
    response = alice_client.post(TEXT_URL, {"collection": "notes", "text": "Asthma."})
    assert response.status_code == 302
    page = alice_client.get(response["Location"])
    assertContains(page, "The text is queued as import")
    assertContains(page, '<span class="mono">text-')
    assertContains(page, "pasted by alice")

    ImportJob.objects.create(import_kind=ImportJob.Kind.DICTIONARY, path="/data/mini.tsv", params={"dictionary_slug": "mini"},
                             state=ImportJob.State.SUCCEEDED, report={"message": "imported mini"})
    page = alice_client.get("/imports/")
    assertContains(page, 'href="/training/models/?dictionary=mini#index-build">Build an index</a>')


def test_a_running_import_shows_the_time_left_at_its_pace(alice_client, alice) -> None:  # type: ignore[no-untyped-def]
    ImportJob.objects.create(
        import_kind=ImportJob.Kind.DICTIONARY, path="/data/hp.obo", params={"dictionary_slug": "hpo"}, created_by=alice,
        state=ImportJob.State.RUNNING, progress=1000, progress_total=4000,
        started_at=timezone.now() - timedelta(seconds=20),
    )
    page = alice_client.get("/imports/")
    assertContains(page, "1,000 / 4,000")
    assertContains(page, "records read · about 60 s left")


def test_a_collection_without_an_active_index_says_what_to_do(client, alice, bob, mini) -> None:  # type: ignore[no-untyped-def]
    client.force_login(alice)
    page = client.get("/collections/notes/")
    assertContains(page, 'href="/training/models/?dictionary=mini#index-build">Build an index</a>')

    client.force_login(bob)
    page = client.get("/collections/notes/")
    assertContains(page, "No active index for Mini yet")
    assertContains(page, "an admin has to build one")
    assertNotContains(page, "/training/")

