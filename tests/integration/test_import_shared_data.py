"""The importers on the full public files of ../shared/data: counts as published, ids resolved as expected.

Expected name counts are computed from the files with linker.data (preferred name + every synonym, minus
exact duplicates within a concept) rather than written down, so the test checks the importer against the
reader, and the reader's record counts against the published figures.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from linker.data import ConceptRecord
from linker.dictionary_formats import iter_dnorm_dictionary, iter_medic_tsv, iter_obo
from webapp.corpus.importers import import_pubtator
from webapp.corpus.models import Link, Mention
from webapp.vocab.importers import MEDIC_SLIM_VOCABULARY, import_dictionary
from webapp.vocab.models import Concept, HierarchyEdge, KnownType, Name

pytestmark = [pytest.mark.shared_data, pytest.mark.slow]


def _names_expected(records: list[ConceptRecord]) -> int:
    return sum(len(r.all_names()) for r in records)


def test_ctd_diseases_imports_every_concept_synonym_edge_and_slim_mapping(db, shared_data: Path):
    path = shared_data / "medic" / "CTD_diseases.tsv.gz"
    records = list(iter_medic_tsv(path))
    assert len(records) == 11_865
    assert sum(len(r.synonyms) for r in records) == 66_129

    report = import_dictionary(path, dictionary_slug="medic")

    # No timing here: import speed is bench/import.py's to measure (this assertion, < 60 s, failed a CI run at
    # 132 s in the full suite on a slow day, while the same test alone took 17 s).
    assert report.seconds > 0
    assert report.concepts == Concept.objects.filter(version_id=report.version_id).count() == 11_865
    assert report.names == Name.objects.filter(concept__version_id=report.version_id).count() == _names_expected(records)
    assert report.edges == HierarchyEdge.objects.filter(version_id=report.version_id).count() == 20_018
    slims = Counter(code for r in records for code in set(r.known_types))
    assert report.known_type_assignments == sum(slims.values())
    assert set(KnownType.objects.filter(vocabulary__name=MEDIC_SLIM_VOCABULARY).values_list("code", flat=True)) == set(slims)
    diabetes = Concept.objects.get(version_id=report.version_id, concept_id="MESH:D003920")
    assert "Metabolic disease" in set(diabetes.known_types.values_list("code", flat=True))
    assert report.warnings == []


def test_hpo_imports_the_live_terms(db, shared_data: Path):
    path = shared_data / "hpo" / "hp.obo.gz"
    records = list(iter_obo(path))

    report = import_dictionary(path, dictionary_slug="hpo")

    assert report.release == "hp/releases/2025-01-16"
    assert report.concepts == 19_034
    assert not Concept.objects.filter(version_id=report.version_id, obsolete=True).exists()
    assert report.names == _names_expected(records)
    assert report.edges == 23_392
    assert set(KnownType.objects.filter(vocabulary__name="HPO subsets").values_list("code", flat=True)) == {
        "hposlim_core", "secondary_consequence",
    }


def test_ncbi_train_gives_5145_mentions_every_single_id_resolved(db, shared_data: Path):
    import_dictionary(shared_data / "medic" / "medic_06Jul2012.txt", dictionary_slug="medic-2012")
    assert len(list(iter_dnorm_dictionary(shared_data / "medic" / "medic_06Jul2012.txt"))) == 11_915

    report = import_pubtator(
        shared_data / "ncbi-disease" / "NCBItrainset_corpus.txt", collection_slug="ncbi-train", dictionary_slug="medic-2012"
    )

    assert report.documents == 593
    assert report.mentions == Mention.objects.filter(document__collection__slug="ncbi-train").count() == 5_145
    assert report.repeated_documents == 1
    assert any("8528200#2" in w for w in report.warnings)
    # The DNorm dictionary knows every id NCBI uses; only "A+B" parts (one link, two concepts) stay unresolved.
    unresolved = Link.objects.filter(mention__document__collection__slug="ncbi-train", concept__isnull=True, nil=False)
    assert report.unresolved_links == unresolved.count()
    assert all("+" in ref for ref in unresolved.values_list("concept_ref", flat=True))


def test_cdr_train_gives_5203_chemicals_and_4182_diseases_resolved_in_ctd(db, shared_data: Path):
    import_dictionary(shared_data / "medic" / "CTD_diseases.tsv.gz", dictionary_slug="medic")

    report = import_pubtator(
        shared_data / "bc5cdr" / "CDR_TrainingSet.PubTator.txt", collection_slug="cdr-train", dictionary_slug="medic"
    )

    mentions = Mention.objects.filter(document__collection__slug="cdr-train")
    assert report.documents == 500
    assert Counter(mentions.values_list("mention_type", flat=True)) == {"Chemical": 5_203, "Disease": 4_182}
    # CDR writes D012345; CTD MESH:D012345 (or the id as an AltDiseaseID): every Disease id resolves.
    disease_links = Link.objects.filter(mention__in=mentions.filter(mention_type="Disease"), nil=False)
    assert disease_links.exists()
    assert not disease_links.filter(concept__isnull=True).exists()
    assert mentions.exclude(part_texts=[]).count() == 89  # composite mentions carry their parts' texts
