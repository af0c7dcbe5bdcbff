"""What changed between two releases of a dictionary: exact lists on two small MEDIC releases and an OBO pair."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.release_fixtures import write_releases
from webapp.vocab.importers import import_dictionary
from webapp.vocab.models import DictionaryVersion
from webapp.vocab.releases import ConceptRef, Merged, NameChange, Renamed, release_diff

pytestmark = pytest.mark.django_db


def _medic_pair(tmp_path: Path) -> tuple[DictionaryVersion, DictionaryVersion]:
    old_file, new_file = write_releases(tmp_path)
    old = import_dictionary(old_file, dictionary_slug="medic")
    new = import_dictionary(new_file, dictionary_slug="medic")
    return DictionaryVersion.objects.get(pk=old.version_id), DictionaryVersion.objects.get(pk=new.version_id)


def test_the_diff_lists_added_removed_merged_renamed_and_changed_names(tmp_path: Path) -> None:
    old, new = _medic_pair(tmp_path)
    diff = release_diff(old, new)
    assert diff.added == [ConceptRef("MESH:D010", "Allergic Rhinitis"), ConceptRef("MESH:D011", "Scurvy")]
    assert diff.removed == [ConceptRef("MESH:D003", "Gout")]
    assert diff.merged == [Merged(ConceptRef("MESH:D004", "Hay fever"), (ConceptRef("MESH:D010", "Allergic Rhinitis"),))]
    assert diff.obsoleted == []
    assert diff.renamed == [Renamed("MESH:D002", "Heart attack", "Myocardial Infarction")]
    assert diff.names == [
        NameChange(ConceptRef("MESH:D002", "Myocardial Infarction"), ("Myocardial Infarction",), ()),
        NameChange(ConceptRef("MESH:D005", "Migraine"), ("Hemicrania",), ("Sick headache",)),
    ]
    assert diff.counts == {"added": 2, "removed": 1, "merged": 1, "obsoleted": 0, "renamed": 1, "names": 2,
                           "names_added": 2, "names_removed": 1}


def test_the_diff_backwards_swaps_added_and_removed(tmp_path: Path) -> None:
    old, new = _medic_pair(tmp_path)
    back = release_diff(new, old)
    assert [c.concept_id for c in back.added] == ["MESH:D003", "MESH:D004"]
    assert [c.concept_id for c in back.removed] == ["MESH:D010", "MESH:D011"]
    assert back.merged == []


OBO = """format-version: 1.2
data-version: hp/releases/{release}
ontology: hp

[Term]
id: HP:0000001
name: All

[Term]
id: HP:0000002
name: Abnormality of body height
is_a: HP:0000001 ! All
{extra}
"""
OBO_OLD_EXTRA = """
[Term]
id: HP:0000003
name: Multicystic kidney dysplasia
is_a: HP:0000001 ! All

[Term]
id: HP:0000004
name: Onset
is_a: HP:0000001 ! All
"""
OBO_NEW_EXTRA = """
[Term]
id: HP:0000003
name: Multicystic kidney dysplasia
is_obsolete: true

[Term]
id: HP:0000005
name: Mode of inheritance
alt_id: HP:0000004
is_a: HP:0000001 ! All
"""


def test_an_obo_release_obsoletes_a_term_and_merges_another_by_alt_id(tmp_path: Path) -> None:
    (tmp_path / "old.obo").write_text(OBO.format(release="2024-01-01", extra=OBO_OLD_EXTRA))
    (tmp_path / "new.obo").write_text(OBO.format(release="2025-01-01", extra=OBO_NEW_EXTRA))
    old = import_dictionary(tmp_path / "old.obo", dictionary_slug="hpo")
    new = import_dictionary(tmp_path / "new.obo", dictionary_slug="hpo", include_obsolete=True)
    diff = release_diff(DictionaryVersion.objects.get(pk=old.version_id), DictionaryVersion.objects.get(pk=new.version_id))
    assert diff.obsoleted == [ConceptRef("HP:0000003", "Multicystic kidney dysplasia")]
    assert diff.merged == [Merged(ConceptRef("HP:0000004", "Onset"), (ConceptRef("HP:0000005", "Mode of inheritance"),))]
    assert diff.added == [ConceptRef("HP:0000005", "Mode of inheritance")]
    assert diff.removed == [] and diff.renamed == []


def test_releases_of_two_dictionaries_or_one_release_twice_are_refused(tmp_path: Path) -> None:
    old, new = _medic_pair(tmp_path)
    other = import_dictionary(tmp_path / "CTD_diseases_2023.tsv", dictionary_slug="medic-copy")
    with pytest.raises(ValueError, match="releases of two dictionaries"):
        release_diff(old, DictionaryVersion.objects.get(pk=other.version_id))
    with pytest.raises(ValueError, match="compared with itself"):
        release_diff(new, new)


def test_the_diff_page_shows_counts_lists_and_concept_links(tmp_path: Path, bob_client) -> None:  # type: ignore[no-untyped-def]
    old, new = _medic_pair(tmp_path)
    response = bob_client.get("/dictionaries/medic/releases/")
    assert response.status_code == 200
    page = response.content.decode()
    assert f"{old.release} → {new.release}" in page
    assert f'href="/dictionaries/medic/concepts/MESH:D010/?version={new.pk}"' in page
    assert f'href="/dictionaries/medic/concepts/MESH:D003/?version={old.pk}"' in page
    assert '<span class="name-removed">Sick headache</span>' in page
    assert "Carry over again" not in page  # an admin's button
    back = bob_client.get(f"/dictionaries/medic/releases/?old={new.pk}&new={old.pk}")
    assert back.status_code == 200
    assert bob_client.get(f"/dictionaries/medic/releases/?old={old.pk}&new={old.pk}").status_code == 404
    assert bob_client.get("/dictionaries/medic/releases/?old=999999").status_code == 404


def test_a_dictionary_with_one_release_has_no_diff(tmp_path: Path, bob_client) -> None:  # type: ignore[no-untyped-def]
    old_file, _ = write_releases(tmp_path)
    import_dictionary(old_file, dictionary_slug="medic")
    assert bob_client.get("/dictionaries/medic/releases/").status_code == 404
