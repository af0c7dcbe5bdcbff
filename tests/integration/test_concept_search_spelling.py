"""Concept search's later tiers: misspelled words corrected against the dictionary's words (kept in vocab_term by
triggers on vocab_name), names holding every word in any order, and the similarity ranking only an empty search
pays."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.db import connection, transaction

from linker.text import normalize
from webapp.vocab import selectors, spelling
from webapp.vocab.importers import import_dictionary
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, Name, Term

pytestmark = pytest.mark.django_db

NAMES = [
    ("D01", "optic neuropathy"),
    ("D02", "peripheral neuropathy"),
    ("D03", "cleft lip and palate"),
    ("D04", "cleft palate"),
    ("D05", "gastric lymphoma"),
    ("D06", "venous sinus thrombosis"),
    ("D07", "decrease in sexual desire"),
    ("D08", "abnormalities of the cerebral cortex"),
    ("D09", "protein excretion"),
    ("D10", "exertion headache"),
    ("D11", "lipoma"),
]


@pytest.fixture
def version(db) -> DictionaryVersion:  # type: ignore[no-untyped-def]
    dictionary = Dictionary.objects.create(slug="spelling", title="Spelling")
    version = DictionaryVersion.objects.create(dictionary=dictionary, release="1", source_format="medic", checksum="s" * 64)
    for cid, name in NAMES:
        concept = Concept.objects.create(version=version, concept_id=cid, preferred_name=name)
        Name.objects.create(concept=concept, text=name, normalized=normalize(name), is_preferred=True)
    return version


def _ids(version: DictionaryVersion, q: str) -> list[str]:
    return [h.concept.concept_id for h in selectors.search_concepts(version, q)]


def _terms(version: DictionaryVersion) -> dict[str, int]:
    return dict(Term.objects.filter(version=version).values_list("term", "names"))


def test_the_triggers_count_each_word_once_per_name(version) -> None:  # type: ignore[no-untyped-def]
    terms = _terms(version)
    assert terms["neuropathy"] == 2
    assert terms["cleft"] == 2
    assert terms["lipoma"] == 1
    assert "" not in terms


def test_the_triggers_follow_synonyms_added_changed_and_removed(version) -> None:  # type: ignore[no-untyped-def]
    concept = Concept.objects.get(version=version, concept_id="D01")
    name = Name.objects.create(concept=concept, text="optic nerve disease", normalized="optic nerve disease",
                               source=Name.Source.CURATOR)
    assert _terms(version)["optic"] == 2 and _terms(version)["nerve"] == 1
    Name.objects.filter(pk=name.pk).update(normalized="optic neuritis")
    assert _terms(version)["nerve"] == 0 and _terms(version)["neuritis"] == 1
    name.delete()
    assert _terms(version)["optic"] == 1 and _terms(version)["neuritis"] == 0
    assert "neuritis" not in _terms_offered(version)


def _terms_offered(version: DictionaryVersion) -> set[str]:
    return set(Term.objects.filter(version=version, names__gt=0).values_list("term", flat=True))


def test_a_whole_version_deleted_takes_its_words(version) -> None:  # type: ignore[no-untyped-def]
    version.delete()
    assert not Term.objects.exists()


def test_an_imported_dictionary_has_its_words(db, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "medic.tsv"
    path.write_text(
        "# DiseaseName\tDiseaseID\tAltDiseaseIDs\tDefinition\tParentIDs\tTreeNumbers\tParentTreeNumbers\tSynonyms\tSlimMappings\n"
        "Optic Neuropathy\tMESH:D009901\t\t\t\t\t\tOptic Nerve Disease|Neuropathy, Optic\t\n"
        "Lipoma\tMESH:D008067\t\t\t\t\t\tLipomas\t\n", encoding="utf-8")
    import_dictionary(path, dictionary_slug="medic-words", fmt="medic")
    version = Dictionary.objects.get(slug="medic-words").latest_version()
    assert {"optic": 3, "neuropathy": 2, "nerve": 1, "disease": 1, "lipoma": 1, "lipomas": 1}.items() <= _terms(version).items()


def test_an_imported_umls_release_has_its_words_and_later_names_count_theirs(db, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    release = Path(shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "umls" / "2099AA", tmp_path / "2099AA"))
    with transaction.atomic():
        import_dictionary(release, dictionary_slug="umls-words")
        version = Dictionary.objects.get(slug="umls-words").latest_version()
        words = {normalize(w) for text in Name.objects.filter(concept__version=version).values_list("normalized", flat=True)
                 for w in text.split()}
        assert set(_terms(version)) == words
        # The import's deferral ended with it: a name added afterwards, in the same transaction, counts its words.
        concept = Concept.objects.filter(version=version).first()
        Name.objects.create(concept=concept, text="zebra stripe", normalized="zebra stripe")
        assert _terms(version)["zebra"] == 1


@pytest.mark.parametrize(("typed", "corrected"), [
    ("otpic neuropathy", "optic neuropathy"),  # two letters swapped
    ("optic neuropaty", "optic neuropathy"),  # one dropped
    ("gastri clymphoma", "gastric lymphoma"),  # a space typed one letter early
    ("venou ssinus thrombosis", "venous sinus thrombosis"),
    ("decreasei n sexual desire", "decrease in sexual desire"),  # one letter late, before a short word
    ("cleft ilp and palate", "cleft lip and palate"),  # a typo beside a known word, not a misplaced space
])
def test_corrections(version, typed: str, corrected: str) -> None:  # type: ignore[no-untyped-def]
    assert spelling.corrections([version], typed)[0] == corrected


def test_known_words_and_a_word_being_typed_are_left_alone(version) -> None:  # type: ignore[no-untyped-def]
    assert spelling.corrections([version], "optic neuropathy") == []
    assert spelling.corrections([version], "optic neuro") == []  # the last word starts "neuropathy"
    assert spelling.corrections([version], "op") == []  # too short to correct


def test_a_misspelled_search_finds_the_concept(version) -> None:  # type: ignore[no-untyped-def]
    assert _ids(version, "Otpic neuropathy")[0] == "D01"
    assert _ids(version, "gastri clymphoma")[0] == "D05"
    assert _ids(version, "excretion of protiens")[0] == "D09"  # every word, in another order, plural


def test_every_word_in_any_order_with_others_between(version) -> None:  # type: ignore[no-untyped-def]
    assert _ids(version, "cerebral abnormalities") == ["D08"]
    assert set(_ids(version, "cleft palate")) == {"D04", "D03"}
    assert _ids(version, "cleft palate")[0] == "D04"  # the name itself first


def test_the_similarity_ranking_runs_only_for_an_otherwise_empty_search(version) -> None:  # type: ignore[no-untyped-def]
    with _statements() as statements:
        assert _ids(version, "optic neuropathy")[0] == "D01"
    assert not any("word_similarity" in s or "%>" in s for s in statements)
    # No word of the dictionary is near: the tiers that read a few rows found nothing, so the ranking runs.
    with _statements() as statements:
        assert _ids(version, "zzqqxx") == []
    assert any("%>" in s for s in statements)


class _statements:
    def __enter__(self) -> list[str]:
        self.seen: list[str] = []
        self.wrapper = connection.execute_wrapper(self._record)
        self.wrapper.__enter__()
        return self.seen

    def __exit__(self, *exc: object) -> None:
        self.wrapper.__exit__(*exc)

    def _record(self, execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        self.seen.append(sql)
        return execute(sql, params, many, context)
