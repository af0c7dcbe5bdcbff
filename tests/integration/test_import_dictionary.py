"""Dictionary import (MEDIC TSV, DNorm text, OBO) into the real PostgreSQL: exact rows, no duplicates on
re-import, and a broken file refused with its file and line while the database stays as it was."""

from __future__ import annotations

import gzip
import hashlib
import re
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from linker.data import ParseError
from webapp.vocab import importers
from webapp.vocab.importers import MEDIC_SLIM_VOCABULARY, import_dictionary
from webapp.vocab.models import (
    Concept,
    Dictionary,
    DictionaryVersion,
    HierarchyEdge,
    KnownType,
    KnownTypeVocabulary,
    Name,
)

MEDIC_HEADER = (
    "# The Comparative Toxicogenomics Database (CTD) - a slice written by the tests\n"
    "#\n"
    "# Report created: Tue Jun 06 11:31:46 EDT 2017\n"
    "#\n"
    "# Fields:\n"
    "# DiseaseName\tDiseaseID\tAltDiseaseIDs\tDefinition\tParentIDs\tTreeNumbers\tParentTreeNumbers\tSynonyms\tSlimMappings\n"
    "#\n"
)
# name, id, alt ids, definition, parents, synonyms, slim mappings
MEDIC_ROWS = [
    ("Diabetes Mellitus", "MESH:D003920", "DO:DOID:9351", "A heterogeneous group of disorders.", "MESH:D044882",
     "Diabetes|diabetes|Diabetes Mellitus", "Endocrine system disease|Metabolic disease"),
    ("Diabetes Mellitus, Type 2", "MESH:D003924", "OMIM:125853", "", "MESH:D003920",
     "NIDDM|Type 2 Diabetes|NIDDM", "Endocrine system disease|Metabolic disease"),
    ("Diseases", "MESH:C", "", "", "", "", ""),
    ("Glucose Metabolism Disorders", "MESH:D044882", "", "", "MESH:C", "", "Metabolic disease"),
]


def medic_text(rows: list[tuple[str, ...]] = MEDIC_ROWS, header: str = MEDIC_HEADER) -> str:
    lines = [f"{n}\t{i}\t{alt}\t{d}\t{p}\t\t\t{syn}\t{slim}" for n, i, alt, d, p, syn, slim in rows]
    return header + "\n".join(lines) + "\n"


DNORM_TEXT = (
    "C565588||Epidermolysis Bullosa With Diaphragmatic Hernia\n"
    "C567755|613097||Tooth Agenesis, Selective, 6|STHAG6\n"
    "D003920||Diabetes Mellitus|Diabetes|Diabetes Mellitus\n"
)

OBO_TEXT = """format-version: 1.2
data-version: hp/releases/2025-01-16
subsetdef: hposlim_core "Core clinical terminology"
ontology: hp

[Term]
id: HP:0000001
name: All

[Term]
id: HP:0000118
name: Phenotypic abnormality
is_a: HP:0000001 ! All

[Term]
id: HP:0001250
name: Seizure
alt_id: HP:0002279
def: "A seizure is an intermittent abnormality of nervous system physiology." [PMID:123]
synonym: "Epileptic seizure" RELATED []
synonym: "Seizures" EXACT plural_form []
synonym: "Seizure" EXACT layperson []
subset: hposlim_core
is_a: HP:0000118 ! Phenotypic abnormality
is_a: HP:0009999 ! a term the file does not define
is_a: HP:0000003 ! an obsolete term

[Term]
id: HP:0000003
name: obsolete Multicystic kidney dysplasia
is_obsolete: true

[Typedef]
id: part_of
name: part of
"""

VOCAB_MODELS = (Dictionary, DictionaryVersion, Concept, Name, HierarchyEdge, KnownType, KnownTypeVocabulary,
                Concept.known_types.through)


def row_counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in VOCAB_MODELS}


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def names_of(concept_id: str, slug: str) -> dict[str, tuple[bool, str]]:
    concept = Concept.objects.get(version__dictionary__slug=slug, concept_id=concept_id)
    return {n.text: (n.is_preferred, n.scope) for n in concept.names.all()}


def edges_of(slug: str) -> set[tuple[str, str]]:
    edges = HierarchyEdge.objects.filter(version__dictionary__slug=slug)
    return set(edges.values_list("child__concept_id", "parent__concept_id"))


# --- MEDIC -------------------------------------------------------------------------------------------


def test_medic_tsv_gives_concepts_names_edges_and_slim_mappings(db, tmp_path, alice):
    path = write(tmp_path / "CTD_diseases.tsv", medic_text())
    report = import_dictionary(path, dictionary_slug="medic", user=alice)

    assert report.created
    assert (report.concepts, report.names, report.edges) == (4, 8, 3)
    assert (report.known_types, report.known_type_assignments) == (2, 5)
    version = DictionaryVersion.objects.get(pk=report.version_id)
    assert version.dictionary.slug == "medic"
    assert version.release == "Tue Jun 06 11:31:46 EDT 2017"
    assert version.source_format == "medic"
    assert version.checksum == hashlib.sha256(path.read_bytes()).hexdigest()
    assert version.imported_by == alice
    assert (version.concept_count, version.name_count, version.edge_count) == (4, 8, 3)

    diabetes = Concept.objects.get(version=version, concept_id="MESH:D003920")
    assert diabetes.preferred_name == "Diabetes Mellitus"
    assert diabetes.alt_ids == ["DO:DOID:9351"]
    assert diabetes.definition == "A heterogeneous group of disorders."
    # The synonym repeating the preferred name is dropped; "diabetes" differs in case and is kept.
    assert names_of("MESH:D003920", "medic") == {
        "Diabetes Mellitus": (True, ""), "Diabetes": (False, ""), "diabetes": (False, "")
    }
    assert names_of("MESH:D003924", "medic") == {
        "Diabetes Mellitus, Type 2": (True, ""), "NIDDM": (False, ""), "Type 2 Diabetes": (False, "")
    }
    assert Name.objects.get(concept__concept_id="MESH:D003924", is_preferred=True).normalized == "diabetes mellitus type 2"
    assert set(Name.objects.values_list("source", flat=True)) == {"dictionary"}

    assert edges_of("medic") == {
        ("MESH:D003920", "MESH:D044882"), ("MESH:D003924", "MESH:D003920"), ("MESH:D044882", "MESH:C"),
    }
    assert set(HierarchyEdge.objects.values_list("relation", flat=True)) == {"is_a"}

    slims = KnownTypeVocabulary.objects.get(name=MEDIC_SLIM_VOCABULARY)
    assert set(slims.types.values_list("code", "label")) == {
        ("Endocrine system disease", "Endocrine system disease"), ("Metabolic disease", "Metabolic disease"),
    }
    assert set(diabetes.known_types.values_list("code", flat=True)) == {"Endocrine system disease", "Metabolic disease"}
    glucose = Concept.objects.get(concept_id="MESH:D044882")
    assert list(glucose.known_types.values_list("code", flat=True)) == ["Metabolic disease"]
    assert report.warnings == []


def test_gzipped_medic_reads_the_same_and_reports_progress(db, tmp_path):
    path = tmp_path / "CTD_diseases.tsv.gz"
    path.write_bytes(gzip.compress(medic_text().encode()))
    calls: list[tuple[int, int | None]] = []

    report = import_dictionary(path, dictionary_slug="medic", progress=lambda done, total: calls.append((done, total)))

    assert (report.concepts, report.names, report.edges) == (4, 8, 3)
    assert calls[-1] == (4, 4)


def test_an_import_leaves_no_pending_entries_in_the_gin_indexes_concept_search_reads(db, tmp_path):
    """A GIN index's pending list is read end to end by every search until merged (autovacuum may be off)."""
    from django.db import connection

    from webapp.vocab.import_steps import GIN_INDEXES

    path = tmp_path / "CTD_diseases.tsv"
    path.write_text(medic_text())
    import_dictionary(path, dictionary_slug="medic")
    with connection.cursor() as cursor:
        for name in GIN_INDEXES:
            cursor.execute("SELECT gin_clean_pending_list(%s::regclass)", [name])
            assert cursor.fetchone()[0] == 0, f"{name} still had pending pages"


def test_new_release_is_a_new_version_and_latest(db, tmp_path):
    first = import_dictionary(write(tmp_path / "a.tsv", medic_text()), dictionary_slug="medic")
    newer_header = MEDIC_HEADER.replace("Tue Jun 06 11:31:46 EDT 2017", "Wed Jul 05 10:00:00 EDT 2017")
    second = import_dictionary(write(tmp_path / "b.tsv", medic_text(MEDIC_ROWS[:3], newer_header)), dictionary_slug="medic")

    assert second.created and second.version_id != first.version_id
    assert Dictionary.objects.get(slug="medic").latest_version().pk == second.version_id
    assert Concept.objects.filter(version_id=second.version_id).count() == 3
    # Both releases share the one MEDIC slim-mapping vocabulary and its types.
    assert KnownTypeVocabulary.objects.count() == 1
    assert KnownType.objects.count() == 2


# --- DNorm and OBO ------------------------------------------------------------------------------------


def test_dnorm_dictionary_gives_concepts_alt_ids_and_no_hierarchy(db, tmp_path):
    path = write(tmp_path / "medic_small.txt", DNORM_TEXT)
    report = import_dictionary(path, dictionary_slug="medic-dnorm")

    assert report.source_format == "dnorm"
    assert (report.concepts, report.names, report.edges, report.known_types) == (3, 5, 0, 0)
    checksum = hashlib.sha256(path.read_bytes()).hexdigest()
    assert report.release == f"medic_small.txt sha256:{checksum[:12]}"  # no release in a DNorm header
    # Bare MeSH ids are stored namespaced, as CTD's MEDIC names the same concepts.
    tooth = Concept.objects.get(concept_id="MESH:C567755")
    assert tooth.alt_ids == ["OMIM:613097"]
    assert names_of("MESH:C567755", "medic-dnorm") == {"Tooth Agenesis, Selective, 6": (True, ""), "STHAG6": (False, "")}
    assert names_of("MESH:D003920", "medic-dnorm") == {"Diabetes Mellitus": (True, ""), "Diabetes": (False, "")}
    assert not HierarchyEdge.objects.exists()


def test_obo_gives_synonym_scopes_alt_ids_edges_and_subsets(db, tmp_path):
    report = import_dictionary(write(tmp_path / "hp.obo", OBO_TEXT), dictionary_slug="hpo")

    assert report.source_format == "obo"
    assert report.release == "hp/releases/2025-01-16"
    assert (report.concepts, report.names, report.edges) == (3, 5, 2)
    assert set(Concept.objects.values_list("concept_id", flat=True)) == {"HP:0000001", "HP:0000118", "HP:0001250"}
    seizure = Concept.objects.get(concept_id="HP:0001250")
    assert seizure.alt_ids == ["HP:0002279"]
    assert seizure.definition == "A seizure is an intermittent abnormality of nervous system physiology."
    assert not seizure.obsolete
    assert names_of("HP:0001250", "hpo") == {
        "Seizure": (True, ""), "Epileptic seizure": (False, "RELATED"), "Seizures": (False, "EXACT"),
    }
    assert edges_of("hpo") == {("HP:0000118", "HP:0000001"), ("HP:0001250", "HP:0000118")}
    assert report.warnings == [
        "skipped 2 is_a edges to 2 terms that are obsolete or absent from the file (e.g. HP:0009999, HP:0000003)"
    ]
    subsets = KnownTypeVocabulary.objects.get(name="HPO subsets")
    assert list(subsets.types.values_list("code", "label")) == [("hposlim_core", "Core clinical terminology")]
    assert list(seizure.known_types.values_list("code", flat=True)) == ["hposlim_core"]
    assert (report.known_types, report.known_type_assignments) == (1, 1)


def test_obo_obsolete_terms_are_imported_flagged_when_asked(db, tmp_path):
    report = import_dictionary(write(tmp_path / "hp.obo", OBO_TEXT), dictionary_slug="hpo", include_obsolete=True)

    assert (report.concepts, report.edges) == (4, 3)
    assert Concept.objects.get(concept_id="HP:0000003").obsolete
    assert ("HP:0001250", "HP:0000003") in edges_of("hpo")
    assert report.warnings == ["skipped 1 is_a edges to 1 terms that are obsolete or absent from the file (e.g. HP:0009999)"]


# --- re-import ----------------------------------------------------------------------------------------


def test_same_file_twice_returns_the_existing_version(db, tmp_path):
    path = write(tmp_path / "CTD_diseases.tsv", medic_text())
    first = import_dictionary(path, dictionary_slug="medic")
    before = row_counts()

    again = import_dictionary(path, dictionary_slug="medic")

    assert not again.created
    assert again.version_id == first.version_id
    assert "same SHA-256" in again.message and "nothing imported" in again.message
    assert (again.concepts, again.names, again.edges, again.known_types) == (4, 8, 3, 2)
    assert row_counts() == before


def test_same_release_from_another_file_is_not_imported_again(db, tmp_path):
    first = import_dictionary(write(tmp_path / "a.tsv", medic_text()), dictionary_slug="medic")
    before = row_counts()

    # Same "Report created" header, one row fewer: another file claiming the same release.
    again = import_dictionary(write(tmp_path / "b.tsv", medic_text(MEDIC_ROWS[:2])), dictionary_slug="medic")

    assert not again.created and again.version_id == first.version_id
    assert "release 'Tue Jun 06 11:31:46 EDT 2017'" in again.message
    assert row_counts() == before


def test_same_file_into_another_dictionary_is_imported(db, tmp_path):
    path = write(tmp_path / "CTD_diseases.tsv", medic_text())
    import_dictionary(path, dictionary_slug="medic")
    other = import_dictionary(path, dictionary_slug="medic-copy")
    assert other.created
    assert Concept.objects.count() == 8


# --- refused files --------------------------------------------------------------------------------------


# Refusal tests run with real commits (transaction=True), so the importer's own transaction is the outermost
# one and its rollback is the real thing, not a savepoint's.
committed = pytest.mark.django_db(transaction=True)


@pytest.fixture
def small_batches(monkeypatch):
    """Two records a batch, so rows are written before the broken line is read and must be rolled back."""
    monkeypatch.setattr(importers, "BATCH_SIZE", 2)


@committed
def test_garbled_medic_line_is_refused_with_file_and_line_and_nothing_written(tmp_path, small_batches):
    import_dictionary(write(tmp_path / "ok.obo", OBO_TEXT), dictionary_slug="hpo")  # unrelated, must survive
    before = row_counts()
    rows = medic_text().splitlines()
    garbled_line = len(rows) + 1
    path = write(tmp_path / "CTD_diseases.tsv", "\n".join(rows) + "\nDiseases of nothing\tMESH:D000001\n")

    with pytest.raises(ParseError) as exc:
        import_dictionary(path, dictionary_slug="medic")

    assert str(exc.value).startswith(f"{path}:{garbled_line}: expected 9 tab-separated columns, found 2")
    assert row_counts() == before
    assert not Dictionary.objects.filter(slug="medic").exists()


@committed
def test_truncated_gzip_is_refused_and_an_existing_dictionary_keeps_its_versions(tmp_path, small_batches):
    import_dictionary(write(tmp_path / "old.tsv", medic_text()), dictionary_slug="medic")
    before = row_counts()
    rows = [(f"Disease {i}", f"MESH:D{i:06d}", "", "", "MESH:C", f"Synonym {i}", "") for i in range(2000)]
    data = gzip.compress(medic_text(rows, MEDIC_HEADER.replace("2017", "2018")).encode())
    path = tmp_path / "CTD_diseases.tsv.gz"
    path.write_bytes(data[: len(data) * 2 // 3])

    with pytest.raises(ParseError) as exc:
        import_dictionary(path, dictionary_slug="medic")

    assert str(exc.value).startswith(f"{path}:{exc.value.line}: unreadable or truncated file")
    assert exc.value.line > 100  # batches were written before the end of the stream was found
    assert row_counts() == before


@committed
def test_malformed_obo_synonym_is_refused_with_its_line(tmp_path, small_batches):
    broken = OBO_TEXT.replace('synonym: "Seizures" EXACT plural_form []', "synonym: Seizures without quotes")
    path = write(tmp_path / "hp.obo", broken)
    stanza_line = broken.splitlines().index("id: HP:0001250")  # the [Term] line just above it, 1-based

    with pytest.raises(ParseError) as exc:
        import_dictionary(path, dictionary_slug="hpo")

    assert str(exc.value).startswith(f"{path}:{stanza_line}: malformed synonym in HP:0001250")
    assert row_counts() == {name: 0 for name in row_counts()}


def test_missing_file_and_bad_slug_are_refused(db, tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        import_dictionary(tmp_path / "absent.tsv", dictionary_slug="medic")
    with pytest.raises(ValueError, match="slug"):
        import_dictionary(write(tmp_path / "a.tsv", medic_text()), dictionary_slug="not a slug")
    assert not Dictionary.objects.exists()


# --- the command ------------------------------------------------------------------------------------------


def test_command_imports_and_reports(db, tmp_path, capsys):
    path = write(tmp_path / "hp.obo", OBO_TEXT)
    call_command("import_dictionary", str(path), "--slug", "hpo", "--title", "HPO", "--include-obsolete")

    out = capsys.readouterr().out
    assert "imported hpo release 'hp/releases/2025-01-16': 4 concepts, 6 names, 3 edges" in out
    assert Dictionary.objects.get(slug="hpo").title == "HPO"

    call_command("import_dictionary", str(path), "--slug", "hpo")
    assert "nothing imported" in capsys.readouterr().out
    assert DictionaryVersion.objects.count() == 1


def test_command_names_file_and_line_of_a_bad_file(db, tmp_path):
    path = write(tmp_path / "bad.txt", "D003920||Diabetes\nno separator here\n")
    with pytest.raises(CommandError, match="^" + re.escape(f"{path}:2: expected 'ID[|ID...]||Name")):
        call_command("import_dictionary", str(path), "--slug", "medic", "--format", "dnorm")
    assert not Dictionary.objects.exists()
