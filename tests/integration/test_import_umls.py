"""The UMLS RRF importer on an invented release (tests/fixtures/umls/2099AA: UMLS itself is licensed, so not one
row of it is here). What the fixture holds, and so every count below:

- 10 concepts C9000001-C9000010. C9000007 has only a French name, C9000008 only a suppressed (SUPPRESS=O) one:
  by default (ENG, every source, suppressed rows left out) 8 concepts with 12 names. C9000009's preferred row
  (TS=P, STT=PF, ISPREF=Y, MSH) comes after an HPO synonym; C9000005's two rows have the same string.
- MRSTY: 11 rows, 4 types (T047, T184, T028, T033); the rows of C9000007 and C9000008 are skipped by default.
- MRREL: PAR/CHD edges 2->1 (stated twice, PAR and CHD), 3->1, 4->2, 5->2 (MSH and HPO); a self row 2->2; 7->1
  (no name by default); RB 9->1 and RN 10->9 (only with the broader rows); a RO row; a suppressed PAR 3->4.
- MRHIER: contexts giving 2->1, 4->2, 5->2 (twice), 10->9 and 9->8 (8 has no name by default); 1 is a root.
"""

from __future__ import annotations

import io
import shutil
import zipfile
from io import StringIO
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from linker.data import ParseError, iter_dictionary, sniff_dictionary_format
from tasks.imports import run_import
from webapp.imports.models import ImportJob
from webapp.vocab.importers import import_dictionary
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, HierarchyEdge, KnownType, Name
from webapp.vocab.umls import UMLS_TYPE_VOCABULARY

pytestmark = pytest.mark.django_db

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "umls" / "2099AA"


@pytest.fixture
def release(tmp_path: Path) -> Path:
    """A copy of the release folder the test may change."""
    return Path(shutil.copytree(FIXTURE, tmp_path / "2099AA"))


def zipped(folder: Path, target: Path) -> Path:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, f"{folder.name}/{path.relative_to(folder)}")
    return target


def edges(slug: str = "umls") -> set[tuple[str, str]]:
    rows = HierarchyEdge.objects.filter(version__dictionary__slug=slug).values_list("child__concept_id", "parent__concept_id")
    return {(child[-2:], parent[-2:]) for child, parent in rows}


def names(cui: str) -> list[str]:
    return sorted(Name.objects.filter(concept__concept_id=cui).values_list("text", flat=True))


def test_default_import_counts_names_types_and_the_mrhier_hierarchy(release: Path) -> None:
    report = import_dictionary(release, dictionary_slug="umls")
    assert (report.created, report.release, report.source_format) == (True, "2099AA", "umls")
    assert (report.concepts, report.names, report.edges, report.known_types, report.known_type_assignments) == (8, 12, 4, 4, 9)
    version = DictionaryVersion.objects.get()
    assert (version.concept_count, version.name_count, version.edge_count) == (8, 12, 4)
    assert sorted(Concept.objects.values_list("concept_id", flat=True)) == [
        f"C900000{i}" for i in (1, 2, 3, 4, 5, 6, 9)] + ["C9000010"]
    # The preferred atom (TS=P, STT=PF, ISPREF=Y) wins wherever it stands among the concept's rows.
    blorptic = Concept.objects.get(concept_id="C9000009")
    assert blorptic.preferred_name == "Blorptic anemia"
    assert list(blorptic.names.filter(is_preferred=True).values_list("text", flat=True)) == ["Blorptic anemia"]
    assert names("C9000002") == ["Fever, Zorblax", "Zorblax fever", "fever, zorblax"]
    assert names("C9000005") == ["Chronic zorblax fever"]  # the same string from MSH and HPO: one name
    assert names("C9000003") == ["Quindle syndrome"]  # its suppressed synonym left out
    assert Concept.objects.get(concept_id="C9000001").alt_ids == ["MSH:D900001", "OMIM:900001"]
    # Semantic types: TUI codes, STY labels, in the UMLS vocabulary.
    fever = Concept.objects.get(concept_id="C9000002")
    assert sorted(fever.known_types.values_list("code", "label")) == [("T047", "Disease or Syndrome"), ("T184", "Sign or Symptom")]
    assert set(KnownType.objects.values_list("vocabulary__name", flat=True)) == {UMLS_TYPE_VOCABULARY}
    # MRHIER: 2->1, 4->2, 5->2 (two contexts, one edge), 10->9; 9->8 skipped, 8 has no name.
    assert edges() == {("02", "01"), ("04", "02"), ("05", "02"), ("10", "09")}
    assert any("MRSTY.RRF: skipped 2 of 11 rows" in w for w in report.warnings), report.warnings
    assert any("skipped 1 MRHIER.RRF contexts" in w for w in report.warnings), report.warnings


def test_mrrel_gives_par_chd_edges_once_and_broader_rows_only_when_asked(release: Path) -> None:
    report = import_dictionary(release, dictionary_slug="umls", hierarchy="mrrel")
    assert report.edges == 4
    assert edges() == {("02", "01"), ("03", "01"), ("04", "02"), ("05", "02")}
    assert any("skipped 1 MRREL.RRF PAR/CHD rows" in w for w in report.warnings), report.warnings  # 7->1
    broad = import_dictionary(release, dictionary_slug="umls-broad", hierarchy="mrrel-broader")
    assert broad.edges == 6
    assert edges("umls-broad") == {("02", "01"), ("03", "01"), ("04", "02"), ("05", "02"), ("09", "01"), ("10", "09")}


def test_without_mrhier_auto_takes_mrrel(release: Path) -> None:
    (release / "META" / "MRHIER.RRF").unlink()
    assert import_dictionary(release, dictionary_slug="umls").edges == 4
    assert ("03", "01") in edges()
    with pytest.raises(ValueError, match="has no MRHIER.RRF"):
        import_dictionary(release, dictionary_slug="other", hierarchy="mrhier")


def test_source_filter(release: Path) -> None:
    report = import_dictionary(release, dictionary_slug="umls", sources="HPO, OMIM", hierarchy="mrrel")
    assert (report.concepts, report.names, report.edges) == (7, 7, 2)
    assert "C9000004" not in set(Concept.objects.values_list("concept_id", flat=True))  # MSH only
    # Without its MSH preferred atom, a concept is named by the best row left: HPO's PT.
    assert Concept.objects.get(concept_id="C9000009").preferred_name == "Blorptic anaemia"
    assert Concept.objects.get(concept_id="C9000001").alt_ids == ["OMIM:900001"]
    assert edges() == {("03", "01"), ("05", "02")}  # OMIM's and HPO's rows only


def test_language_filter_and_which_language_names_the_concept(release: Path) -> None:
    report = import_dictionary(release, dictionary_slug="umls", languages="ENG,FRE")
    assert (report.concepts, report.names) == (9, 14)
    assert Concept.objects.get(concept_id="C9000007").preferred_name == "Fièvre de Plonk"
    assert Concept.objects.get(concept_id="C9000001").preferred_name == "Zorblax disorder"  # ENG first
    import_dictionary(release, dictionary_slug="umls-fr", languages=["FRE", "ENG"], release="fr")
    assert Concept.objects.get(version__dictionary__slug="umls-fr", concept_id="C9000001").preferred_name == "Maladie de Zorblax"


def test_suppressed_rows_only_when_asked(release: Path) -> None:
    report = import_dictionary(release, dictionary_slug="umls", include_suppressed=True, hierarchy="mrrel")
    assert (report.concepts, report.names) == (9, 14)
    assert names("C9000003") == ["Quindle syndrome", "Quindle-Marsh syndrome"]
    assert ("03", "04") in edges()  # the suppressed PAR row too


@pytest.mark.parametrize(
    ("file", "row", "line", "says"),
    [
        ("MRCONSO.RRF", "C9000011|ENG|P|L1|PF|S1|Y|A9|||MSH|MH|D1|Too few|0|N||\n", 18, "expected 18 fields (CUI|LAT|"),
        ("MRCONSO.RRF", "C900011|ENG|P|L1|PF|S1|Y|A9||||MSH|MH|D1|Short CUI|0|N||\n", 18, "CUI 'C900011' is not C followed by 7 digits"),
        ("MRCONSO.RRF", "C9000000|ENG|P|L1|PF|S1|Y|A9||||MSH|MH|D1|Out of order|0|N||\n", 18, "must be sorted by CUI"),
        ("MRSTY.RRF", "C9000001|T47|B1|Odd|AT1||\n", 12, "TUI 'T47' is not T followed by 3 digits"),
        ("MRREL.RRF", "C9000001|A1|AUI|PAR|9000002|A2|AUI||R1||MSH|MSH|||N||\n", 13, "CUI2 '9000002' is not C"),
        ("MRHIER.RRF", "C9000001|A1|1|A2|MSH|isa|A2|D1|\n", 8, "expected 9 fields"),
    ],
)
def test_a_malformed_row_is_refused_with_file_and_line(release: Path, file: str, row: str, line: int, says: str) -> None:
    with open(release / "META" / file, "a", encoding="utf-8") as fh:
        fh.write(row)
    with pytest.raises(ParseError) as refused:
        import_dictionary(release, dictionary_slug="umls", hierarchy="mrrel" if file == "MRREL.RRF" else "auto")
    assert (refused.value.path, refused.value.line) == (f"{release}/META/{file}", line)
    assert says in str(refused.value)
    assert not Dictionary.objects.exists() and not Concept.objects.exists() and not KnownType.objects.exists()


def test_re_import_is_refused_and_changes_nothing(release: Path, tmp_path: Path) -> None:
    first = import_dictionary(release, dictionary_slug="umls")
    counts = (Concept.objects.count(), Name.objects.count(), HierarchyEdge.objects.count(), KnownType.objects.count())
    again = import_dictionary(release, dictionary_slug="umls")
    assert (again.created, again.version_id) == (False, first.version_id)
    assert "already has this file (same SHA-256)" in again.message
    # The same release as a .zip: the same files read, the same checksum.
    archive = import_dictionary(zipped(release, tmp_path / "release.zip"), dictionary_slug="umls", release="other")
    assert (archive.created, archive.version_id) == (False, first.version_id)
    assert (Concept.objects.count(), Name.objects.count(), HierarchyEdge.objects.count(), KnownType.objects.count()) == counts
    assert DictionaryVersion.objects.count() == 1


def test_release_label_from_the_folder_name_without_release_dat(tmp_path: Path) -> None:
    meta = shutil.copytree(FIXTURE / "META", tmp_path / "2098AB" / "META")
    assert sniff_dictionary_format(meta) == "umls"
    assert import_dictionary(meta, dictionary_slug="umls").release == "2098AB"


def test_a_cycle_is_kept_and_reported(release: Path) -> None:
    with open(release / "META" / "MRREL.RRF", "a", encoding="utf-8") as fh:
        fh.write("C9000001|A9000001|AUI|PAR|C9000004|A9000009|AUI|isa|R9000013||MSH|MSH|||N||\n")
    report = import_dictionary(release, dictionary_slug="umls", hierarchy="mrrel")
    assert report.edges == 5
    assert any("C9000001 -> C9000004 -> C9000002 -> C9000001" in w for w in report.warnings), report.warnings


def test_nothing_left_after_the_filters_is_refused(release: Path) -> None:
    with pytest.raises(ValueError, match="no concepts: no row is left after the filters"):
        import_dictionary(release, dictionary_slug="umls", sources="NOPE")
    assert not Dictionary.objects.exists()


def test_the_linker_reads_the_concepts_too() -> None:
    records = list(iter_dictionary(FIXTURE))
    assert len(records) == 8 and records[0].preferred_name == "Zorblax disorder"


def test_the_command_with_sab_and_language(release: Path) -> None:
    out = StringIO()
    call_command("import_dictionary", str(release), "--slug", "umls", "--format", "umls", "--sab", "MSH,OMIM",
                 "--language", "ENG", "--umls-hierarchy", "mrrel", stdout=out, stderr=StringIO())
    assert "imported umls release '2099AA' (UMLS, languages ENG; sources MSH, OMIM; suppressed rows left out): " \
           "7 concepts, 9 names, 4 edges, 3 known types" in out.getvalue()
    with pytest.raises(CommandError, match="options of a UMLS release"):
        call_command("import_dictionary", str(release / "META" / "MRCONSO.RRF"), "--slug", "x", "--format", "dnorm",
                     "--sab", "MSH", stdout=StringIO())


def test_the_api_upload_of_a_zip_is_imported_by_the_job(alice, settings, tmp_path: Path, release: Path) -> None:  # type: ignore[no-untyped-def]
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    api = APIClient()
    api.force_authenticate(alice)
    buffer = io.BytesIO(zipped(release, tmp_path / "2099AA.zip").read_bytes())
    upload = SimpleUploadedFile("2099AA.zip", buffer.getvalue(), content_type="application/zip")
    response = api.post("/api/dictionaries/upload/", {"file": upload, "slug": "umls", "sources": "HPO,OMIM"}, format="multipart")
    assert response.status_code == 202, response.content
    job = ImportJob.objects.get()
    assert run_import(job.pk) == ImportJob.State.SUCCEEDED
    job.refresh_from_db()
    assert (job.report["concepts"], job.report["names"], job.report["release"]) == (7, 7, "2099AA")
    assert job.progress == 7


def test_the_admin_form_takes_a_zip_of_the_release_and_the_job_imports_it(alice_client, settings, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                          release: Path) -> None:
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    data = zipped(release, tmp_path / "2099AA.zip").read_bytes()
    response = alice_client.post("/imports/dictionary/", {"file": SimpleUploadedFile("2099AA.zip", data), "new_slug": "umls"})
    assert response.status_code == 302, response.content[:2000]
    job = ImportJob.objects.get()
    assert job.params["fmt"] == "umls"
    assert run_import(job.pk) == ImportJob.State.SUCCEEDED
    job.refresh_from_db()
    assert (job.report["concepts"], job.report["names"], job.report["edges"]) == (8, 12, 4)
