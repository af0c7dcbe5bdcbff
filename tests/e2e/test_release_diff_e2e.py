"""Browser: an admin reads what changed between two releases of a dictionary, what was carried over, the index
waiting for the new release, and opens a curated mention whose concept did not survive to relink it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import PASSWORD
from tests.e2e.conftest import login
from tests.integration.release_fixtures import write_releases


@pytest.fixture
def two_releases(transactional_db, tmp_path, settings, alice, bob):  # type: ignore[no-untyped-def]
    from django.db import connections

    from tasks.releases import carry_over_task
    from webapp.corpus.models import Collection, Document, Link, Mention
    from webapp.linking.registry import forget_all
    from webapp.training.services import activate_index, build_index, create_index_version
    from webapp.vocab.importers import import_dictionary
    from webapp.vocab.models import Concept, DictionaryVersion, Name

    connections.settings["default"]["CONN_MAX_AGE"] = 0
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    forget_all()
    old_file, new_file = write_releases(tmp_path)
    old = DictionaryVersion.objects.get(pk=import_dictionary(old_file, dictionary_slug="medic").version_id)
    activate_index(build_index(create_index_version(old, None)).pk)
    gout = Concept.objects.get(version=old, concept_id="MESH:D003")
    for cid, text in (("MESH:D001", "wheezy chest"), ("MESH:D003", "gouty toe"), ("MESH:D004", "pollen sniffles")):
        Name.objects.create(concept=Concept.objects.get(version=old, concept_id=cid), text=text, normalized=text,
                            source=Name.Source.CURATOR, created_by=bob)
    collection = Collection.objects.create(slug="notes", title="Clinic notes", dictionary=old.dictionary)
    document = Document.objects.create(collection=collection, external_id="note-1", text="Painful gouty toe since May.")
    mention = Mention.objects.create(document=document, start=8, end=17, text="gouty toe", status=Mention.Status.ACCEPTED)
    Link.objects.create(mention=mention, concept=gout, concept_ref=gout.concept_id, origin=Link.Origin.CURATOR, created_by=bob)
    new = DictionaryVersion.objects.get(pk=import_dictionary(new_file, dictionary_slug="medic").version_id)
    carry_over_task(new.pk)
    yield mention
    forget_all()


def test_an_admin_reads_the_release_diff_and_opens_a_mention_to_relink(  # type: ignore[no-untyped-def]
    live_server, browser, two_releases, screenshots: Path
) -> None:
    mention = two_releases
    page = login(browser, live_server.url, "alice", PASSWORD)
    page.goto(f"{live_server.url}/dictionaries/medic/")
    page.get_by_role("link", name="What changed between releases ›").click()
    page.wait_for_url("**/dictionaries/medic/releases/")
    counts = {el.get_attribute("data-count"): el.locator("dd").inner_text() for el in page.locator(".release-counts .stat").all()}
    assert counts["added"] == "2" and counts["removed"] == "1" and counts["merged"] == "1" and counts["renamed"] == "1"
    assert "2 curator synonyms" in page.locator("#carry-over").inner_text()
    assert page.locator("#release-index .index-build").count() == 1  # the index queued for the new release
    assert "Once built, promote it" in page.locator("#release-index").inner_text()
    assert page.locator("#review-synonyms tr[data-synonym='gouty toe']").count() == 1
    page.screenshot(path=str(screenshots / "release-diff.png"), full_page=True)

    page.locator(f"#review-links tr[data-mention='{mention.pk}']").get_by_role("link", name="Open to relink ›").click()
    page.wait_for_url(f"**/curate/notes/documents/{mention.document_id}/?m={mention.pk}")
    assert "gouty toe" in page.locator("#document-text").inner_text()
