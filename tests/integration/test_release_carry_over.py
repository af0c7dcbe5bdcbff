"""A new release imported beside the old one: curator synonyms carried to the surviving concepts (exact), the
synonyms and curated links to review, an index queued for it, the same file refused again; UI, API and command."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command

from tasks.releases import carry_over_task
from tests.integration.release_fixtures import write_releases
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.linking.models import IndexVersion
from webapp.training.releases import review_links, review_synonyms
from webapp.training.services import activate_index, build_index, create_index_version
from webapp.vocab.importers import import_dictionary
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, Name, ReleaseCarryOver

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _artifacts(settings, tmp_path):  # type: ignore[no-untyped-def]
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"


def _concept(version: DictionaryVersion, cid: str) -> Concept:
    return Concept.objects.get(version=version, concept_id=cid)


def _curator_name(version: DictionaryVersion, cid: str, text: str, user) -> Name:  # type: ignore[no-untyped-def]
    return Name.objects.create(concept=_concept(version, cid), text=text, normalized=text.lower(),
                               source=Name.Source.CURATOR, created_by=user)


def _curated(collection: Collection, text: str, concept: Concept, user, n: int) -> Mention:  # type: ignore[no-untyped-def]
    document = Document.objects.create(collection=collection, external_id=f"doc{n}", text=text)
    mention = Mention.objects.create(document=document, start=0, end=len(text), text=text, status=Mention.Status.ACCEPTED)
    Link.objects.create(mention=mention, concept=concept, concept_ref=concept.concept_id, origin=Link.Origin.CURATOR,
                        created_by=user)
    return mention


@pytest.fixture
def releases(tmp_path: Path, bob):  # type: ignore[no-untyped-def]
    """Release 2023 with curator work on it (synonyms, curated links), then release 2024 imported beside it."""
    old_file, new_file = write_releases(tmp_path)
    old = DictionaryVersion.objects.get(pk=import_dictionary(old_file, dictionary_slug="medic").version_id)
    _curator_name(old, "MESH:D001", "wheezy chest", bob)  # same id in 2024
    _curator_name(old, "MESH:D004", "pollen sniffles", bob)  # D004 merged into D010
    _curator_name(old, "MESH:D003", "gouty toe", bob)  # Gout is gone
    _curator_name(old, "MESH:D002", "cardiac infarct", bob)  # renamed, same id
    _curator_name(old, "MESH:D005", "hemicrania", bob)  # 2024 has "Hemicrania" itself
    collection = Collection.objects.create(slug="notes", title="Notes", dictionary=old.dictionary)
    lost = _curated(collection, "gouty toe", _concept(old, "MESH:D003"), bob, 1)
    _curated(collection, "hay fever", _concept(old, "MESH:D004"), bob, 2)  # survives as D010
    relinked = _curated(collection, "gout", _concept(old, "MESH:D003"), bob, 3)
    Link.objects.create(mention=relinked, concept=_concept(old, "MESH:D006"), concept_ref="MESH:D006",
                        origin=Link.Origin.CURATOR, created_by=bob)  # a later decision moved it to a survivor
    new_report = import_dictionary(new_file, dictionary_slug="medic")
    new = DictionaryVersion.objects.get(pk=new_report.version_id)
    return old, new, lost, new_file


def _curator_names(version: DictionaryVersion) -> list[tuple[str, str]]:
    rows = Name.objects.filter(concept__version=version, source=Name.Source.CURATOR)
    return sorted(rows.values_list("concept__concept_id", "text"))


def test_importing_a_new_release_queues_its_carry_over_and_keeps_the_old_release(releases) -> None:  # type: ignore[no-untyped-def]
    old, new, _, _ = releases
    assert ReleaseCarryOver.objects.get(version=new).state == ReleaseCarryOver.State.QUEUED
    assert not ReleaseCarryOver.objects.filter(version=old).exists()  # a first release carries nothing
    assert Concept.objects.filter(version=old).count() == 6 and Concept.objects.filter(version=new).count() == 6


def test_curator_synonyms_are_carried_to_the_surviving_concepts(releases, bob) -> None:  # type: ignore[no-untyped-def]
    old, new, _, _ = releases
    assert carry_over_task(new.pk) == ReleaseCarryOver.State.DONE
    assert _curator_names(new) == [
        ("MESH:D001", "wheezy chest"), ("MESH:D002", "cardiac infarct"), ("MESH:D010", "pollen sniffles"),
    ]
    assert set(Name.objects.filter(concept__version=new, source="curator").values_list("created_by", flat=True)) == {bob.pk}
    record = ReleaseCarryOver.objects.get(version=new)
    assert (record.previous_id, record.synonyms_carried, record.synonyms_present, record.synonyms_to_review,
            record.links_to_review) == (old.pk, 3, 1, 1, 1)
    assert len(_curator_names(old)) == 5  # the old release keeps its own


def test_carrying_over_again_copies_nothing_twice_and_picks_up_new_synonyms(releases, bob) -> None:  # type: ignore[no-untyped-def]
    old, new, _, _ = releases
    carry_over_task(new.pk)
    carry_over_task(new.pk)
    assert len(_curator_names(new)) == 3
    _curator_name(old, "MESH:D006", "soft bones", bob)  # curators kept working on the old release
    carry_over_task(new.pk)
    assert ("MESH:D006", "soft bones") in _curator_names(new)
    record = ReleaseCarryOver.objects.get(version=new)
    assert (record.synonyms_carried, record.synonyms_present, record.synonyms_to_review) == (4, 1, 1)


def test_the_review_lists_name_what_did_not_survive(releases) -> None:  # type: ignore[no-untyped-def]
    _, new, lost, _ = releases
    assert [(r.name.concept.concept_id, r.name.text) for r in review_synonyms(new)] == [("MESH:D003", "gouty toe")]
    assert [(link.mention_id, link.concept.concept_id) for link in review_links(new)] == [(lost.pk, "MESH:D003")]


def test_the_diff_page_lists_the_review_with_a_way_to_act(releases, alice_client) -> None:  # type: ignore[no-untyped-def]
    _, new, lost, _ = releases
    carry_over_task(new.pk)
    page = alice_client.get("/dictionaries/medic/releases/").content.decode()
    assert "<strong>3</strong> curator synonyms" in page
    assert 'data-synonym="gouty toe"' in page
    assert f'href="/curate/notes/documents/{lost.document_id}/?m={lost.pk}"' in page
    assert "Carry over again" in page
    response = alice_client.post(f"/dictionaries/medic/releases/{new.pk}/carry-over/")
    assert response.status_code == 302
    assert ReleaseCarryOver.objects.get(version=new).state == ReleaseCarryOver.State.QUEUED


def test_a_curator_cannot_run_the_carry_over(releases, bob_client) -> None:  # type: ignore[no-untyped-def]
    _, new, _, _ = releases
    assert bob_client.post(f"/dictionaries/medic/releases/{new.pk}/carry-over/").status_code == 403


def test_an_index_is_queued_for_the_new_release_with_the_active_encoder_and_not_activated(tmp_path: Path, bob) -> None:  # type: ignore[no-untyped-def]
    old_file, new_file = write_releases(tmp_path)
    old = DictionaryVersion.objects.get(pk=import_dictionary(old_file, dictionary_slug="medic").version_id)
    active = activate_index(build_index(create_index_version(old, None)).pk)
    new = DictionaryVersion.objects.get(pk=import_dictionary(new_file, dictionary_slug="medic").version_id)

    carry_over_task(new.pk)
    carry_over_task(new.pk)  # delivered twice: still one build

    (queued,) = IndexVersion.objects.filter(dictionary_version=new)
    assert (queued.state, queued.encoder_id, queued.first_stage_id, queued.activate_when_built) == ("building", None, None, False)
    assert IndexVersion.objects.get(pk=active.pk).state == IndexVersion.State.ACTIVE
    message = ReleaseCarryOver.objects.get(version=new).index_message
    assert f"index {queued.pk}" in message
    assert f"Index {queued.pk} of" in bob_client_page(new)


def bob_client_page(new: DictionaryVersion) -> str:
    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.get(username="bob"))
    return client.get(f"/dictionaries/medic/releases/?new={new.pk}").content.decode()


def test_without_an_active_index_none_is_queued(releases) -> None:  # type: ignore[no-untyped-def]
    _, new, _, _ = releases
    carry_over_task(new.pk)
    assert not IndexVersion.objects.filter(dictionary_version=new).exists()
    assert "no index of this dictionary is active" in ReleaseCarryOver.objects.get(version=new).index_message


def test_the_same_file_imported_again_is_refused_as_before(releases) -> None:  # type: ignore[no-untyped-def]
    _, new, _, new_file = releases
    carry_over_task(new.pk)
    again = import_dictionary(new_file, dictionary_slug="medic")
    assert not again.created and again.version_id == new.pk
    assert "same SHA-256" in again.message and "nothing imported" in again.message
    assert DictionaryVersion.objects.filter(dictionary__slug="medic").count() == 2
    assert ReleaseCarryOver.objects.get(version=new).state == ReleaseCarryOver.State.DONE  # not queued again


def test_the_management_command_imports_a_release_beside_the_old_one(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    old_file, new_file = write_releases(tmp_path)
    call_command("import_dictionary", str(old_file), slug="medic", verbosity=0)
    call_command("import_dictionary", str(new_file), slug="medic", release="2024 slice", verbosity=0)
    releases = list(Dictionary.objects.get(slug="medic").versions.order_by("imported_at").values_list("release", flat=True))
    assert releases == ["Mon Jan 02 10:00:00 EST 2023", "2024 slice"]
    assert ReleaseCarryOver.objects.filter(version__release="2024 slice").exists()


def test_the_api_queues_a_release_with_its_label(tmp_path: Path, alice) -> None:  # type: ignore[no-untyped-def]
    from rest_framework.test import APIClient

    from webapp.imports.models import ImportJob

    _, new_file = write_releases(tmp_path)
    client = APIClient()
    client.force_authenticate(alice)
    response = client.post("/api/imports/", {"kind": "dictionary", "path": str(new_file), "slug": "medic",
                                             "release": "2024 from the API"}, format="json")
    assert response.status_code == 202, response.content
    assert ImportJob.objects.get(pk=response.json()["id"]).params["release"] == "2024 from the API"
    with new_file.open("rb") as fh:
        upload = client.post("/api/dictionaries/upload/", {"file": fh, "slug": "medic", "release": "uploaded 2024"},
                             format="multipart")
    assert upload.status_code == 202, upload.content
    assert ImportJob.objects.get(pk=upload.json()["id"]).params["release"] == "uploaded 2024"


def test_promoting_the_new_releases_index_carries_the_synonyms_added_to_the_old_one_since(releases, bob) -> None:  # type: ignore[no-untyped-def]
    from webapp.training.services import promote_index

    old, new, _lost, _file = releases
    activate_index(build_index(create_index_version(old, None)).pk)
    carry_over_task(new.pk)  # at import: the synonyms made until then
    _curator_name(old, "MESH:D006", "soft bones", bob)  # a curator still works on the old release meanwhile
    assert ("MESH:D006", "soft bones") not in _curator_names(new)
    promote_index(build_index(create_index_version(new, None)).pk)
    assert ("MESH:D006", "soft bones") in _curator_names(new)  # not lost when the new release starts serving
    assert _curator_names(new).count(("MESH:D001", "wheezy chest")) == 1  # nothing copied twice
