"""BioC XML and JSON, JSON Lines and PubAnnotation files are imported streamed, a batch per transaction, resumable
(issue #45): memory stays flat as the file grows, PMC passages are kept, an import cut short continues from its last
committed batch (every document once), gzip files read as plain ones, and a document already there is unchanged
(no-op) or, its text changed, replaced (kept if curated or gold, unless forced)."""

from __future__ import annotations

import gzip
import json
import tracemalloc
from pathlib import Path

import pytest

from tasks.imports import run_import
from tests.bioc_files import write_bioc_json, write_bioc_xml
from webapp.corpus.formats import FormatError
from webapp.corpus.formats.services import import_documents
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.imports.models import ImportJob


def _peak_mb(path: Path, fmt: str, slug: str) -> tuple[float, int]:
    tracemalloc.start()
    try:
        report = import_documents(path, fmt, collection_slug=slug)
        return tracemalloc.get_traced_memory()[1] / 2**20, report.documents
    finally:
        tracemalloc.stop()


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", ["bioc-xml", "bioc-json"])
def test_memory_stays_flat_as_the_file_grows(tmp_path: Path, fmt: str) -> None:
    write = write_bioc_xml if fmt == "bioc-xml" else write_bioc_json
    small, large = tmp_path / "small", tmp_path / "large"
    write(small, 1_000)
    write(large, 5_000)
    small_peak, small_docs = _peak_mb(small, fmt, "small")
    large_peak, large_docs = _peak_mb(large, fmt, "large")
    assert (small_docs, large_docs) == (1_000, 5_000)
    assert Mention.objects.filter(document__collection__slug="large").count() == 10_000
    # Five times the documents (the large file is ~5 MB, its records several times that): the peak is one batch's,
    # plus the ids the file has used (for its repeats), not the file's.
    assert large_peak < small_peak * 1.5 + 1, (small_peak, large_peak, large.stat().st_size / 2**20)


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", ["bioc-xml", "bioc-json"])
def test_pmc_passages_are_kept_and_gzip_reads_as_plain(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "pmc.gz"
    (write_bioc_xml if fmt == "bioc-xml" else write_bioc_json)(path, 3, gz=True)
    report = import_documents(path, fmt, collection_slug="pmc")
    assert (report.documents, report.mentions, report.links) == (3, 6, 6)
    document = Document.objects.get(external_id="PMC2")
    assert [(p["type"], p["section_type"]) for p in document.metadata["passages"]] == [
        ("front", "TITLE"), ("abstract", "ABSTRACT"), ("paragraph", "INTRO"),
    ]
    assert document.metadata["license"] == "CC BY"
    assert document.title == "Article 2 on APC."
    abstract = document.metadata["passages"][1]
    assert document.text[abstract["offset"] : abstract["offset"] + abstract["length"]].startswith("Colorectal cancer")
    assert sorted(document.mentions.values_list("text", "mention_type")) == [("APC", "Gene"), ("Colorectal cancer", "Disease")]
    assert Collection.objects.get(slug="pmc").has_gold


@pytest.mark.django_db
def test_jsonl_and_pubannotation_gzip_array_and_lines(tmp_path: Path) -> None:
    line = {"id": "1", "text": "Asthma attack.", "mentions": [{"start": 0, "end": 6, "type": "Disease", "links": [{"concept_id": "D001249"}]}]}
    jsonl = tmp_path / "docs.jsonl.gz"
    jsonl.write_bytes(gzip.compress(("\ufeff" + json.dumps(line) + "\n\n" + json.dumps({**line, "id": "2"}) + "\n").encode()))
    assert import_documents(jsonl, "jsonl", collection_slug="j").documents == 2
    one = {"text": "Colorectal cancer.", "sourcedb": "PubMed", "sourceid": "7",
           "denotations": [{"id": "T1", "span": {"begin": 0, "end": 17}, "obj": "D015179"}]}
    array = tmp_path / "pa.json.gz"
    array.write_bytes(gzip.compress(json.dumps([one, {**one, "sourceid": "8"}]).encode()))
    lines = tmp_path / "pa.jsonl"
    lines.write_text("".join(json.dumps({**one, "sourceid": str(n)}) + "\n" for n in (9, 10, 11)))
    assert import_documents(array, "pubannotation", collection_slug="pa").documents == 2
    assert import_documents(lines, "pubannotation", collection_slug="pa").documents == 3
    assert Mention.objects.filter(document__collection__slug="pa").count() == 5


@pytest.mark.django_db
def test_a_document_again_is_unchanged_or_replaced_and_gold_is_kept_unless_forced(tmp_path: Path) -> None:
    first = tmp_path / "a.jsonl"
    plain = {"id": "p", "text": "Gout."}
    gold = {"id": "g", "text": "Asthma attack.", "mentions": [{"start": 0, "end": 6, "type": "Disease", "links": [{"concept_id": "D1"}]}]}
    first.write_text(json.dumps(plain) + "\n" + json.dumps(gold) + "\n")
    import_documents(first, "jsonl", collection_slug="c")
    again = import_documents(first, "jsonl", collection_slug="c")
    assert (again.new, again.unchanged, again.replaced, again.documents, again.created) == (0, 2, 0, 0, False)

    changed = tmp_path / "b.jsonl"
    changed.write_text(
        json.dumps({"id": "p", "text": "Gout and asthma.", "mentions": [{"start": 9, "end": 15, "type": "Disease"}]}) + "\n"
        + json.dumps({**gold, "text": "Asthma attacks."}) + "\n"
    )
    report = import_documents(changed, "jsonl", collection_slug="c")
    assert (report.replaced, report.kept_curated, report.kept_ids) == (1, 1, ["g"])
    assert any("text changed and was replaced" in w and "document p" in w for w in report.warnings)
    assert any("import again with force" in w for w in report.warnings)
    p = Document.objects.get(external_id="p")
    assert (p.text, list(p.mentions.values_list("text", flat=True))) == ("Gout and asthma.", ["asthma"])
    assert Document.objects.get(external_id="g").text == "Asthma attack."

    forced = import_documents(changed, "jsonl", collection_slug="c", force=True)
    assert (forced.replaced, forced.unchanged, forced.kept_curated) == (1, 1, 0)
    g = Document.objects.get(external_id="g")
    assert g.text == "Asthma attacks." and g.mentions.get().links.get().concept_ref == "D1"
    assert Document.objects.count() == 2 and Link.objects.count() == 1


def _job(path: Path, fmt: str) -> ImportJob:
    params = {"collection_slug": "pmc", "format": fmt, "title": None, "dictionary_slug": None}
    return ImportJob.objects.create(import_kind="documents", path=str(path), params=params)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("fmt", ["bioc-xml", "bioc-json"])
def test_an_import_stopped_after_two_batches_continues_from_there(tmp_path: Path, fmt: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("webapp.corpus.streamed_import.BATCH_ITEMS", 4)
    path = tmp_path / "pmc.gz"
    (write_bioc_xml if fmt == "bioc-xml" else write_bioc_json)(path, 10, gz=True)
    first = _job(path, fmt)

    def killed_after_two_batches(done: int, total: int | None) -> None:
        assert total == 10
        if done == 8:
            raise KeyboardInterrupt("the worker is killed")  # after the second batch's commit

    with pytest.raises(KeyboardInterrupt):
        import_documents(path, fmt, collection_slug="pmc", job_id=first.pk, progress=killed_after_two_batches)
    first.refresh_from_db()
    assert first.result["resume"] == {"file": path.name, "collection": "pmc", "position": 8, "done": False}
    assert Document.objects.count() == 8 and Mention.objects.count() == 16

    second = _job(path, fmt)
    assert run_import(second.pk) == ImportJob.State.SUCCEEDED
    second.refresh_from_db()
    report = second.report
    assert (report["resumed_at"], report["new"], report["unchanged"], report["mentions"]) == (8, 2, 0, 4)
    assert "continued after item 8" in report["message"]
    assert sorted(Document.objects.values_list("external_id", flat=True)) == sorted(f"PMC{n}" for n in range(1, 11))
    assert Mention.objects.count() == 20 and Link.objects.count() == 20

    third = _job(path, fmt)  # finished: the file again is read from the start, every document unchanged
    assert run_import(third.pk) == ImportJob.State.SUCCEEDED
    third.refresh_from_db()
    assert (third.report["resumed_at"], third.report["unchanged"], third.report["new"]) == (0, 10, 0)


@pytest.mark.django_db(transaction=True)
def test_a_bad_document_keeps_the_batches_before_it_and_the_fixed_file_continues(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("webapp.corpus.streamed_import.BATCH_ITEMS", 3)
    path = tmp_path / "pmc.json"
    write_bioc_json(path, 10, bad=8)
    job = _job(path, "bioc-json")
    assert run_import(job.pk) == ImportJob.State.FAILED
    job.refresh_from_db()
    assert job.error.startswith("pmc.json: document PMC8 / annotation T1: span ")
    assert "reads 'Colorectal cancer' in the text, the file says 'Gout'" in job.error
    assert "the 6 items before its batch are committed: 6 new, 0 replaced, 0 unchanged; import the file again" in job.error
    assert Document.objects.count() == 6

    write_bioc_json(path, 10)  # the file mended
    again = _job(path, "bioc-json")
    assert run_import(again.pk) == ImportJob.State.SUCCEEDED
    again.refresh_from_db()
    assert (again.report["resumed_at"], again.report["new"]) == (6, 4)
    assert Document.objects.count() == 10


@pytest.mark.django_db
def test_a_cut_short_json_file_names_the_document(tmp_path: Path) -> None:
    path = tmp_path / "pmc.json.gz"
    write_bioc_json(path, 3, gz=True)
    whole = gzip.decompress(path.read_bytes())
    path.write_bytes(gzip.compress(whole[: whole.index(b'"PMC3"') + 20]))
    with pytest.raises(FormatError, match=r"pmc\.json\.gz: document #3, line 4: not BioC JSON \(Unterminated string .*\); cut short\?"):
        import_documents(path, "bioc-json", collection_slug="c")
    cut = tmp_path / "pmc.xml"
    write_bioc_xml(cut, 3)
    cut.write_text(cut.read_text()[:-40])
    with pytest.raises(FormatError, match=r"pmc\.xml: line 5: not well-formed XML \("):
        import_documents(cut, "bioc-xml", collection_slug="c")


@pytest.mark.django_db(transaction=True)
def test_a_repeat_after_the_resume_point_is_still_numbered(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("webapp.corpus.streamed_import.BATCH_ITEMS", 2)
    path = tmp_path / "docs.jsonl"
    ids = ["d1", "x", "d1", "y", "d1"]
    path.write_text("".join(json.dumps({"id": i, "text": f"Text {n}."}) + "\n" for n, i in enumerate(ids)))
    first = _job(path, "jsonl")

    def killed_after_one_batch(done: int, total: int | None) -> None:
        raise KeyboardInterrupt("the worker is killed")

    with pytest.raises(KeyboardInterrupt):
        import_documents(path, "jsonl", collection_slug="pmc", job_id=first.pk, progress=killed_after_one_batch)
    again = _job(path, "jsonl")
    assert run_import(again.pk) == ImportJob.State.SUCCEEDED
    again.refresh_from_db()
    assert (again.report["resumed_at"], again.report["new"], again.report["repeated_documents"]) == (2, 3, 2)
    assert sorted(Document.objects.values_list("external_id", "text")) == [
        ("d1", "Text 0."), ("d1#2", "Text 2."), ("d1#3", "Text 4."), ("x", "Text 1."), ("y", "Text 3."),
    ]


def test_seen_ids_hold_hashes_and_number_repeats() -> None:
    from webapp.corpus.batch_import import SeenIds

    seen = SeenIds()
    for n in range(10_000):  # past a merge into the sorted array
        seen.add(f"PMC{n}")
    assert "PMC0" in seen and "PMC9999" in seen and "PMC10000" not in seen and len(seen) == 10_000
    seen.number("PMC5")
    seen.number("PMC5")
    assert "PMC5#2" in seen and "PMC5#3" in seen and "PMC5#4" not in seen


def test_a_gzip_upload_is_told_by_what_it_holds() -> None:
    from webapp.imports.queueing import document_format

    def gz(text: str) -> bytes:
        return gzip.compress(text.encode())[:200]  # the first bytes of an upload

    assert document_format("pmc.xml.gz", gz("<?xml version='1.0'?><collection><source>PMC</source>")) == "bioc-xml"
    assert document_format("pmc.json.gz", gz('{"source": "PMC", "documents": [{"id": "1"')) == "bioc-json"
    assert document_format("docs.jsonl.gz", gz('{"id": "1", "text": "x"}\n{"id": "2"')) == "jsonl"
    assert document_format("pa.json.gz", gz('[{"text": "x", "sourceid": "1"}')) == "pubannotation"
    assert document_format("pubmed24n0001.xml.gz", gz('<?xml version="1.0"?>\n<!DOCTYPE PubmedArticleSet>\n<PubmedArticleSet>')) == "pubmed-xml"
    assert document_format("download", gz("<PubmedArticleSet><PubmedArticle>")) == "pubmed-xml"
    assert document_format("pubmed24n0002.xml.gz", b"\x1f\x8b\x08\x00garbage") == "pubmed-xml"  # its reader names the fault
