"""An admin imports in the browser, a real Celery worker running each job: a dictionary uploaded from the
Dictionaries page is followed on the Imports page to "succeeded" without a reload and then listed; a text pasted
on a collection's page becomes a document of it; a malformed PubTator file is refused with its line on the
Imports page, and nothing of it is written. Screenshots of each page go to the screenshots folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import PASSWORD
from tests.e2e.conftest import login
from tests.integration.conftest import celery_worker_process  # noqa: F401  (a fixture: a real worker)
from webapp.corpus.models import Collection, Document
from webapp.imports.models import ImportJob
from webapp.vocab.models import Dictionary, DictionaryVersion

pytestmark = pytest.mark.worker

# A tiny OBO ontology written for the test: a root and two children, one with a synonym.
OBO = """format-version: 1.2
data-version: mini/2024-06-01
ontology: mini

[Term]
id: MINI:0000001
name: disease

[Term]
id: MINI:0000002
name: asthma
synonym: "bronchial asthma" EXACT []
is_a: MINI:0000001 ! disease

[Term]
id: MINI:0000003
name: diabetes mellitus
is_a: MINI:0000001 ! disease
"""
# Line 3 puts a mention past the end of its document's text (title and abstract: 37 characters).
BAD_PUBTATOR = "1|t|Asthma in children.\n1|a|Asthma is common.\n1\t0\t99\tAsthma\tDisease\tD001249\n\n"
# A job: queued, taken by the worker, imported, the table polled every 2 s. 120 s, not 60: twice in CI runs
# (2026-11-26, 2026-11-28) the malformed import was not yet shown "failed" after 60 s while the suite ran, and
# passed on its own both times; on 2026-11-29 again after 120 s, right after the pasted-text test, whose detection
# runs on the same one-process test worker: the likeliest cause is that the import waits behind it on a loaded
# machine. 300 s is a hang guard, not a speed requirement.
WAIT_MS = 300_000


@pytest.fixture
def world(transactional_db, alice, celery_worker_process, settings, tmp_path: Path):  # type: ignore[no-untyped-def]  # noqa: F811
    from django.db import connections

    connections.settings["default"]["CONN_MAX_AGE"] = 0  # live-server threads close their connections
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    settings.TASK_QUEUE_OVERRIDE = celery_worker_process.queue  # the jobs go to this test's own worker
    dictionary = Dictionary.objects.create(slug="medic-mini", title="MEDIC mini")
    DictionaryVersion.objects.create(dictionary=dictionary, release="1", source_format="medic", checksum="d" * 64)
    Collection.objects.create(slug="notes", title="Clinical notes", dictionary=dictionary)
    return tmp_path


def wait_for_job(page, state: str) -> int:  # type: ignore[no-untyped-def]
    """The highlighted job (the one just queued) once it has reached ``state``, seen without reloading."""
    row = page.locator("#import-table tr.highlight")
    row.wait_for()
    page.wait_for_selector(f"#import-table tr.highlight[data-state={state}]", timeout=WAIT_MS)
    return int(row.get_attribute("id").removeprefix("import-job-"))


def test_a_dictionary_upload_is_followed_to_the_end_and_listed(live_server, browser, world: Path, settings,  # type: ignore[no-untyped-def]
                                                                screenshots) -> None:
    obo = world / "mini.obo"
    obo.write_text(OBO)
    page = login(browser, live_server.url, "alice", PASSWORD)
    page.click("nav.mainnav >> text=Dictionaries")
    page.click("text=Import a dictionary")
    page.wait_for_url(lambda url: url.endswith("/imports/dictionary/"))
    page.wait_for_load_state()
    assert page.evaluate("document.activeElement.id") == "id_file"  # the page opens at the file to choose
    assert page.is_visible("#id_new_slug")  # "A new dictionary" is chosen: its slug is asked for
    page.select_option("#id_dictionary", "medic-mini")
    assert not page.is_visible("#id_new_slug")  # an existing one needs none
    page.select_option("#id_dictionary", "")
    page.screenshot(path=str(screenshots / "import-dictionary.png"), full_page=True)

    page.click("#import-dictionary-form button[type=submit]")  # nothing chosen: refused by the fields
    page.wait_for_selector("#id_file_error")
    assert page.locator("#id_file_error").inner_text() == "Choose a file."
    assert page.evaluate("document.activeElement.id") == "id_file"
    page.screenshot(path=str(screenshots / "import-dictionary-refused.png"), full_page=True)

    settings.IMPORT_MAX_UPLOAD_BYTES = 100  # a file over the limit is refused before it is sent
    page.goto(f"{live_server.url}/imports/dictionary/")
    page.set_input_files("#id_file", str(obo))
    assert page.locator("#id_file ~ .field-error[data-client]").inner_text() == (
        f"mini.obo is {len(OBO):,} bytes, over the 100-byte limit (IMPORT_MAX_UPLOAD_BYTES)")
    page.click("#import-dictionary-form button[type=submit]")
    assert page.url.endswith("/imports/dictionary/") and not ImportJob.objects.exists()
    settings.IMPORT_MAX_UPLOAD_BYTES = 100_000_000
    page.goto(f"{live_server.url}/imports/dictionary/")

    page.set_input_files("#id_file", str(obo))
    page.fill("#id_new_slug", "mini")
    page.fill("#id_title", "Mini ontology")
    page.click("#import-dictionary-form button[type=submit]")
    page.wait_for_url(lambda url: "/imports/?job=" in url)
    job_id = wait_for_job(page, "succeeded")
    assert page.locator(f"#import-job-{job_id} progress").get_attribute("value") == "100"
    assert "imported mini release 'mini/2024-06-01': 3 concepts" in page.locator(f"#import-job-{job_id}").inner_text()
    assert page.locator("#import-jobs").get_attribute("hx-trigger") is None  # nothing runs: no more polling
    assert page.is_visible(f"#import-job-{job_id} >> text=Build an index")  # what the admin does next
    page.screenshot(path=str(screenshots / "import-dictionary-succeeded.png"), full_page=True)

    page.click("nav.mainnav >> text=Dictionaries")
    assert page.is_visible("#dictionary-mini >> text=Mini ontology")
    page.screenshot(path=str(screenshots / "dictionaries-after-import.png"), full_page=True)
    assert page.locator("#dictionary-mini").locator("xpath=ancestor::section").locator("text=mini/2024-06-01").count() == 1
    assert ImportJob.objects.get(pk=job_id).state == ImportJob.State.SUCCEEDED


def test_a_pasted_text_becomes_a_document_of_the_collection(live_server, browser, world: Path, screenshots) -> None:  # type: ignore[no-untyped-def]
    page = login(browser, live_server.url, "alice", PASSWORD)
    page.goto(f"{live_server.url}/collections/notes/")
    assert page.is_visible("#index-missing >> text=Build an index")  # a new dictionary: the admin is told what to do
    page.screenshot(path=str(screenshots / "collection-no-index-admin.png"), full_page=True)
    page.click(".page-actions >> text=Add text")
    page.wait_for_url(lambda url: "/imports/text/?collection=notes" in url)
    page.wait_for_load_state()
    assert page.locator("#id_collection").input_value() == "notes"
    assert not page.is_visible("#id_new_slug")  # an existing collection: no new slug asked for
    assert page.evaluate("document.activeElement.id") == "id_text"

    page.click("#import-text-form button[type=submit]")  # nothing pasted
    page.wait_for_selector("#id_text_error")
    assert "The text is empty" in page.locator("#id_text_error").inner_text()
    page.screenshot(path=str(screenshots / "import-text-refused.png"), full_page=True)

    page.fill("#id_document_title", "Admission note")
    page.fill("#id_text", "A 9-year-old with night-time asthma.\nNo wheeze on examination.")
    page.screenshot(path=str(screenshots / "import-text.png"), full_page=True)
    page.click("#import-text-form button[type=submit]")
    page.wait_for_url(lambda url: "/imports/?job=" in url)
    job_id = wait_for_job(page, "succeeded")
    page.screenshot(path=str(screenshots / "import-text-succeeded.png"), full_page=True)

    page.click(f"#import-job-{job_id} >> text=notes")  # the collection, linked from the finished job
    page.wait_for_url(lambda url: url.endswith("/collections/notes/"))
    assert page.is_visible("#document-list >> text=Admission note")
    page.click("#document-list tbody a")  # the document, by its id
    page.wait_for_url(lambda url: "/documents/" in url)
    assert page.is_visible("text=A 9-year-old with night-time asthma.")
    page.screenshot(path=str(screenshots / "import-text-document.png"), full_page=True)
    document = Document.objects.get(collection__slug="notes")
    assert (document.title, document.mentions.count()) == ("Admission note", 0)


def test_a_malformed_file_is_refused_with_its_line_and_nothing_is_written(live_server, browser, world: Path,  # type: ignore[no-untyped-def]
                                                                          screenshots) -> None:
    bad = world / "CDR_sample.PubTator.txt"
    bad.write_text(BAD_PUBTATOR)
    page = login(browser, live_server.url, "alice", PASSWORD)
    page.click("nav.mainnav >> text=Imports")
    page.click(".page-actions >> text=Import documents")
    page.wait_for_url(lambda url: url.endswith("/imports/documents/"))
    page.wait_for_load_state()
    assert page.is_visible("#id_new_slug")
    page.screenshot(path=str(screenshots / "import-documents.png"), full_page=True)
    page.set_input_files("#id_file", str(bad))
    page.fill("#id_new_slug", "cdr-sample")
    page.click("#import-documents-form button[type=submit]")
    page.wait_for_url(lambda url: "/imports/?job=" in url)
    job_id = wait_for_job(page, "failed")

    message = page.locator(f"#import-job-{job_id} [role=alert]").inner_text()
    assert message == "CDR_sample.PubTator.txt:3: span 0-99 outside the document text (length 37)"
    page.screenshot(path=str(screenshots / "import-documents-refused.png"), full_page=True)
    assert not Collection.objects.filter(slug="cdr-sample").exists()
    assert not Document.objects.exists()
