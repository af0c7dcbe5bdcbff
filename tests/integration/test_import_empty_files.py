"""Empty and truncated files are refused, not imported as nothing: a MEDIC file of header lines only (a download
cut short) creates no release and leaves the release's name to the real file; an empty PubTator, JSONL, BioC or
brat file creates no collection and reports no success. Each refusal writes nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from tasks.imports import run_import
from tests.integration.test_import_dictionary import MEDIC_HEADER, MEDIC_ROWS, medic_text
from tests.integration.test_import_refusals import nothing_written, tmp_zip, upload, write
from webapp.corpus.formats import FormatError
from webapp.corpus.formats.services import import_documents
from webapp.corpus.importers import import_pubtator
from webapp.corpus.models import Collection, Document
from webapp.imports.models import ImportJob
from webapp.vocab.importers import import_dictionary
from webapp.vocab.models import Dictionary, DictionaryVersion

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice_api(alice) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(alice)
    return client


def test_medic_file_of_header_lines_only_is_refused_and_leaves_the_release_free(tmp_path: Path) -> None:
    truncated = write(tmp_path / "CTD_diseases_cut.tsv", MEDIC_HEADER)
    with pytest.raises(ValueError, match=re.escape(f"{truncated}: no concepts: the file holds only header or comment lines")):
        import_dictionary(truncated, dictionary_slug="medic")
    assert not Dictionary.objects.exists() and not DictionaryVersion.objects.exists()
    # The real file of the same release ("Report created" in the same header) now imports.
    report = import_dictionary(write(tmp_path / "CTD_diseases.tsv", medic_text()), dictionary_slug="medic")
    assert report.created and report.concepts == len(MEDIC_ROWS)


def test_header_only_files_are_refused_by_the_command_and_for_obo(tmp_path: Path) -> None:
    truncated = write(tmp_path / "cut.tsv", MEDIC_HEADER)
    with pytest.raises(CommandError, match="no concepts: the file holds only header or comment lines"):
        call_command("import_dictionary", str(truncated), "--slug", "medic")
    empty_obo = write(tmp_path / "empty.obo", "format-version: 1.2\ndata-version: x\n")
    with pytest.raises(ValueError, match=r"empty\.obo: no concepts: the file holds no \[Term\] stanza"):
        import_dictionary(empty_obo, dictionary_slug="hpo")
    assert not Dictionary.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_import_job_of_a_header_only_dictionary_fails(tmp_path: Path) -> None:
    truncated = write(tmp_path / "cut.tsv", MEDIC_HEADER)
    job = ImportJob.objects.create(import_kind="dictionary", path=str(truncated), params={"dictionary_slug": "medic"})
    assert run_import(job.pk) == ImportJob.State.FAILED
    job.refresh_from_db()
    assert job.message.startswith(f"{truncated.name}: no concepts: ")  # by its name: the folder is the server's
    assert not Dictionary.objects.exists()


@pytest.mark.parametrize("content", ["", "\n\n", "\ufeff"])
def test_empty_pubtator_file_creates_no_collection(tmp_path: Path, content: str) -> None:
    path = write(tmp_path / "empty.txt", content)
    with pytest.raises(FormatError, match=re.escape(f"{path}: no documents: the file is empty or holds none")):
        import_pubtator(path, collection_slug="p")
    with pytest.raises(CommandError, match="no documents"):
        call_command("import_documents", str(path), "--collection", "p")
    assert nothing_written()


@pytest.mark.parametrize(("fmt", "content"), [("jsonl", "\n"), ("bioc-json", '{"source": "", "date": "", "key": "", "infons": {}, "documents": []}'),
                                              ("bioc-xml", "<?xml version='1.0'?><collection><source/><date/><key/></collection>")])
def test_empty_files_of_every_format_are_refused(tmp_path: Path, fmt: str, content: str) -> None:
    path = write(tmp_path / "empty", content)
    with pytest.raises(FormatError, match="no documents"):
        import_documents(path, fmt, collection_slug="e")
    assert nothing_written()


def test_empty_brat_zip_is_a_400(alice_api: APIClient) -> None:
    Collection.objects.create(slug="c", title="C")
    buffer = tmp_zip({})
    response = upload(alice_api, "c", "brat.zip", buffer, "brat")
    assert response.status_code == 400
    assert response.json()["detail"] == "brat.zip: no documents: the file is empty or holds none (cut short?)"
    response = upload(alice_api, "c", "empty.txt", b"", "pubtator")
    assert response.status_code == 400
    assert not Document.objects.exists()
