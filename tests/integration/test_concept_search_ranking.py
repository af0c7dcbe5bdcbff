"""Concept search ranks the concept a curator means first (issue 41, item 8): a concept whose preferred name starts
with the query comes before one whose synonym merely starts with it ("diabetes" is Diabetes Mellitus, not
Hemochromatosis's "Diabetes, Bronze"), a query that is whole words of a name comes before one that only starts a
word ("flu" is "Flu, Human", not "Flushing"), and a number in the query must be a word of the name ("complement 7
deficiency" is not complement 5's). The names are CTD MEDIC's own (bench/concept_search.py measures the full file).
"""

from __future__ import annotations

import pytest

from linker.text import normalize
from webapp.vocab import selectors
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, Name

pytestmark = pytest.mark.django_db

CONCEPTS = {
    # concept id: (preferred name, synonyms), as CTD MEDIC has them
    "MESH:D006432": ("Hemochromatosis", ["Bronze Diabetes", "Diabetes, Bronze", "Bronzed Cirrhosis"]),
    "MESH:D003921": ("Diabetes Mellitus, Experimental", ["Alloxan Diabetes", "Diabetes, Alloxan", "Diabetes, Streptozocin"]),
    "MESH:D003920": ("Diabetes Mellitus", []),
    "MESH:D003919": ("Diabetes Insipidus", []),
    "MESH:D003922": ("Diabetes Mellitus, Type 1", ["IDDM", "Diabetes, Autoimmune"]),
    "MESH:C566443": ("Complement Component 7 Deficiency", ["C7D", "C7 Deficiency"]),
    "MESH:C537005": ("Complement component 5 deficiency", ["C5D", "C5 Deficiency"]),
    "OMIM:217000": ("COMPLEMENT COMPONENT 2 DEFICIENCY", ["C2D", "C2 DEFICIENCY"]),
    "MESH:C562875": ("Complement Factor H Deficiency", []),
    "MESH:D007251": ("Influenza, Human", ["Flu, Human", "Human Flu", "Grippe"]),
    "MESH:D005483": ("Flushing", []),
    "MESH:D005483x": ("Fluorosis, Dental", []),
}


@pytest.fixture
def version(db) -> DictionaryVersion:  # type: ignore[no-untyped-def]
    dictionary = Dictionary.objects.create(slug="ranking", title="Ranking")
    version = DictionaryVersion.objects.create(dictionary=dictionary, release="1", source_format="medic", checksum="r" * 64)
    for cid, (preferred, synonyms) in CONCEPTS.items():
        concept = Concept.objects.create(version=version, concept_id=cid, preferred_name=preferred)
        Name.objects.create(concept=concept, text=preferred, normalized=normalize(preferred), is_preferred=True)
        for synonym in synonyms:
            Name.objects.create(concept=concept, text=synonym, normalized=normalize(synonym))
    return version


def _ids(version: DictionaryVersion, q: str) -> list[str]:
    return [h.concept.concept_id for h in selectors.search_concepts(version, q)]


@pytest.mark.parametrize("scan", [1000, 3])  # every match read and sorted / the common-prefix path
def test_a_preferred_name_starting_with_the_query_beats_a_synonym_that_does(version, monkeypatch, scan: int) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(selectors, "PREFIX_SCAN", scan)
    found = _ids(version, "diabetes")
    assert found[:2] == ["MESH:D003920", "MESH:D003919"]  # Diabetes Mellitus, then Diabetes Insipidus
    # The synonyms that merely start with "diabetes" come after every preferred name that does.
    assert found.index("MESH:D006432") > found.index("MESH:D003922")
    hit = selectors.search_concepts(version, "diabetes")[0]
    assert hit.matched == "Diabetes Mellitus" and hit.matched_preferred


def test_a_misspelled_query_ranks_as_the_corrected_one(version) -> None:  # type: ignore[no-untyped-def]
    assert _ids(version, "diabetis")[0] == "MESH:D003920"


def test_an_exact_synonym_still_comes_first(version) -> None:  # type: ignore[no-untyped-def]
    assert _ids(version, "diabetes bronze")[0] == "MESH:D006432"
    assert _ids(version, "C7 deficiency")[0] == "MESH:C566443"
    assert _ids(version, "IDDM")[0] == "MESH:D003922"


def test_a_query_of_whole_words_beats_one_that_only_starts_a_word(version) -> None:  # type: ignore[no-untyped-def]
    assert _ids(version, "flu")[0] == "MESH:D007251"
    assert _ids(version, "flush")[0] == "MESH:D005483"


@pytest.mark.parametrize("q", ["complement 7 deficiency", "deficiency complement component 7", "Complement 7 deficiency"])
def test_a_number_in_the_query_picks_that_member_of_a_series(version, q: str) -> None:  # type: ignore[no-untyped-def]
    found = _ids(version, q)
    assert found[0] == "MESH:C566443"
    assert "MESH:C537005" not in found and "MESH:C562875" not in found  # other members are not "7"


def test_the_preferred_name_of_a_series_member_is_found_as_typed(version) -> None:  # type: ignore[no-untyped-def]
    assert _ids(version, "complement component 7 deficiency")[0] == "MESH:C566443"
    assert set(_ids(version, "complement component")[:3]) == {"OMIM:217000", "MESH:C537005", "MESH:C566443"}
