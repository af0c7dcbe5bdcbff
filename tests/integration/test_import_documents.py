"""PubTator import into the real PostgreSQL: documents, gold mentions and one gold link per composite part,
ids resolved in every spelling, a repeated PMID kept deliberately, re-import a no-op, and a bad file refused
with its line while the database stays as it was."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from linker.data import GoldMention, ParseError, PubTatorDocument
from webapp.corpus import importers
from webapp.corpus.importers import id_variants, import_pubtator
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.vocab.importers import import_dictionary
from webapp.vocab.models import Concept

# A MEDIC slice in CTD's spelling ("MESH:D..."); D061325 carries the OMIM id NCBI writes as an alt id.
MEDIC = (
    "# Report created: test slice\n"
    "# DiseaseName\tDiseaseID\tAltDiseaseIDs\tDefinition\tParentIDs\tTreeNumbers\tParentTreeNumbers\tSynonyms\tSlimMappings\n"
    "Eye Diseases\tMESH:D014786\t\t\t\t\t\t\t\n"
    "Hearing Disorders\tMESH:D006311\t\t\t\t\t\t\t\n"
    "Breast Neoplasms\tMESH:D001943\t\t\t\t\t\t\t\n"
    "Ovarian Neoplasms\tMESH:D010051\t\t\t\t\t\t\t\n"
    "Hereditary Breast and Ovarian Cancer Syndrome\tMESH:D061325\tOMIM:604370\t\t\t\t\t\t\n"
)

T1 = "Ocular and auditory toxicity in hemodialyzed patients receiving desferrioxamine."
A1 = "Ototoxicity was seen in two patients; one had an unexplained rash."
T2 = "Breast and ovarian cancer in BRCA1 carriers."
A2 = "Familial breast-ovarian cancer is dominant; ataxia was also noted."


def line(pmid: str, text: str, mention: str, mtype: str, ids: str, parts: str | None = None, nth: int = 0) -> str:
    """An annotation line with offsets computed from the text, as a corpus file has them."""
    start = -1
    for _ in range(nth + 1):
        start = text.index(mention, start + 1)
    cols = [pmid, str(start), str(start + len(mention)), mention, mtype, ids] + ([parts] if parts else [])
    return "\t".join(cols)


def pubtator() -> str:
    text1, text2 = f"{T1} {A1}", f"{T2} {A2}"
    doc1 = [
        f"100|t|{T1}",
        f"100|a|{A1}",
        line("100", text1, "Ocular and auditory toxicity", "Disease", "D014786|D006311", "Ocular toxicity|auditory toxicity"),
        line("100", text1, "desferrioxamine", "Chemical", "D003676"),
        line("100", text1, "Ototoxicity", "Disease", "MESH:D006311"),
        line("100", text1, "rash", "Disease", "-1"),
        "100\tCID\tD003676\tD006311",
    ]
    doc2 = [
        f"200|t|{T2}",
        f"200|a|{A2}",
        line("200", text2, "Breast and ovarian cancer", "CompositeMention", "D001943|D010051"),
        line("200", text2, "breast-ovarian cancer", "SpecificDisease", "OMIM:604370"),
        line("200", text2, "ataxia", "SpecificDisease", "D001259"),
        line("200", text2, "BRCA1 carriers", "Modifier", "D001943+D010051"),
    ]
    # PMID 200 again, as NCBI Disease's training file repeats 8528200.
    return "\n".join(doc1) + "\n\n" + "\n".join(doc2) + "\n\n" + "\n".join(doc2) + "\n\n"


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def medic(db, tmp_path) -> None:
    import_dictionary(write(tmp_path / "medic.tsv", MEDIC), dictionary_slug="medic")


def counts() -> dict[str, int]:
    return {m.__name__: m.objects.count() for m in (Collection, Document, Mention, Link)}


def gold_links(pmid: str, mention_text: str) -> list[tuple[int, str, str | None, bool]]:
    mention = Mention.objects.get(document__external_id=pmid, text=mention_text)
    return [
        (link.part, link.concept_ref, link.concept.concept_id if link.concept else None, link.nil)
        for link in mention.links.order_by("part")
    ]


def test_documents_mentions_and_links_with_ids_resolved(medic, tmp_path):
    path = write(tmp_path / "corpus.txt", pubtator())
    report = import_pubtator(path, collection_slug="ncbi-train", title="NCBI train", dictionary_slug="medic")

    assert (report.documents, report.repeated_documents, report.mentions, report.links) == (3, 1, 12, 15)
    collection = Collection.objects.get(slug="ncbi-train")
    assert collection.title == "NCBI train"
    assert collection.has_gold
    assert collection.dictionary.slug == "medic"

    doc = Document.objects.get(collection=collection, external_id="100")
    assert doc.title == T1
    assert doc.text == f"{T1} {A1}"
    assert doc.metadata["relations"] == [["CID", "D003676", "D006311"]]

    composite = Mention.objects.get(document=doc, text="Ocular and auditory toxicity")
    assert (composite.start, composite.end) == (0, 28)
    assert composite.mention_type == "Disease"
    assert composite.part_texts == ["Ocular toxicity", "auditory toxicity"]
    assert (composite.status, composite.source) == ("pending", "gold")
    assert gold_links("100", "Ocular and auditory toxicity") == [
        (0, "D014786", "MESH:D014786", False), (1, "D006311", "MESH:D006311", False),
    ]
    assert gold_links("100", "Ototoxicity") == [(0, "MESH:D006311", "MESH:D006311", False)]
    assert gold_links("100", "rash") == [(0, "", None, True)]
    # No chemical vocabulary: the id is kept as written, unresolved.
    assert gold_links("100", "desferrioxamine") == [(0, "D003676", None, False)]
    assert Mention.objects.get(document=doc, text="Ototoxicity").part_texts == []

    assert gold_links("200", "Breast and ovarian cancer") == [
        (0, "D001943", "MESH:D001943", False), (1, "D010051", "MESH:D010051", False),
    ]
    assert gold_links("200", "breast-ovarian cancer") == [(0, "OMIM:604370", "MESH:D061325", False)]  # via alt id
    assert gold_links("200", "BRCA1 carriers") == [(0, "D001943+D010051", None, False)]  # one part, two concepts
    assert report.resolved_links + report.unresolved_links + report.nil_links == report.links
    assert set(Link.objects.values_list("origin", flat=True)) == {"gold"}


def test_repeated_pmid_is_its_own_document(medic, tmp_path):
    path = write(tmp_path / "corpus.txt", pubtator())
    report = import_pubtator(path, collection_slug="ncbi-train", dictionary_slug="medic")

    assert set(Document.objects.values_list("external_id", flat=True)) == {"100", "200", "200#2"}
    repeat = Document.objects.get(external_id="200#2")
    assert repeat.metadata["repeat_of"] == "200"
    assert repeat.text == Document.objects.get(external_id="200").text
    assert repeat.mentions.count() == 4  # counted twice, as the published NCBI figures do
    assert any("PMID 200 appears again" in w and "200#2" in w for w in report.warnings)


def test_counts_of_resolution(medic, tmp_path):
    report = import_pubtator(write(tmp_path / "c.txt", pubtator()), collection_slug="c", dictionary_slug="medic")
    # doc 100: 2 + 1 resolved, 1 chemical unresolved, 1 NIL; doc 200 (twice): 2 + 1 resolved, ataxia and the
    # "+" part unresolved.
    assert (report.resolved_links, report.unresolved_links, report.nil_links) == (3 + 2 * 3, 1 + 2 * 2, 1)
    assert any("D001259" in w and "D003676" in w for w in report.warnings)
    assert any("joined by '+'" in w for w in report.warnings)


def test_without_a_dictionary_ids_are_kept_unresolved(db, tmp_path):
    report = import_pubtator(write(tmp_path / "c.txt", pubtator()), collection_slug="c")

    assert report.resolved_links == 0 and report.nil_links == 1
    assert not Link.objects.filter(concept__isnull=False).exists()
    assert Collection.objects.get(slug="c").dictionary is None
    assert not any("lacks" in w for w in report.warnings)


def test_same_file_twice_skips_every_document(medic, tmp_path):
    path = write(tmp_path / "corpus.txt", pubtator())
    import_pubtator(path, collection_slug="ncbi-train", dictionary_slug="medic")
    before = counts()

    again = import_pubtator(path, collection_slug="ncbi-train", dictionary_slug="medic")

    assert not again.created
    assert (again.documents, again.skipped_documents, again.mentions) == (0, 3, 0)
    assert any("3 documents already in collection ncbi-train were skipped" in w for w in again.warnings)
    assert counts() == before


def test_same_file_into_another_collection_is_imported(medic, tmp_path):
    path = write(tmp_path / "corpus.txt", pubtator())
    import_pubtator(path, collection_slug="a")
    import_pubtator(path, collection_slug="b")
    assert Document.objects.filter(collection__slug="b").count() == 3


def test_id_variants_cover_the_spellings_of_the_corpora():
    assert id_variants("D012345") == ["D012345", "MESH:D012345"]
    assert id_variants("MESH:D012345") == ["MESH:D012345", "D012345"]
    assert id_variants("OMIM:123456") == ["OMIM:123456", "123456"]
    assert id_variants("123456") == ["123456", "OMIM:123456"]


# --- refused files ------------------------------------------------------------------------------------

# Real commits: the importer's transaction is the outermost one, its rollback the real thing.
committed = pytest.mark.django_db(transaction=True)


@pytest.fixture
def one_document_batches(monkeypatch):
    """Documents written one batch at a time, so the first ones are in the database when the bad line comes."""
    monkeypatch.setattr(importers, "DOCUMENT_BATCH", 1)


def _file_with_bad_last_line(tmp_path: Path, bad: str) -> tuple[Path, int]:
    text = pubtator().rstrip("\n") + "\n" + bad + "\n"
    return write(tmp_path / "corpus.txt", text), len(text.splitlines())


@committed
def test_offsets_outside_the_text_are_refused_with_the_line(tmp_path, one_document_batches):
    import_pubtator(write(tmp_path / "other.txt", pubtator()), collection_slug="other")  # must survive
    before = counts()
    path, bad_line = _file_with_bad_last_line(tmp_path, "200\t5000\t5006\tataxia\tSpecificDisease\tD001259")

    with pytest.raises(ParseError) as exc:
        import_pubtator(path, collection_slug="ncbi-train")

    assert str(exc.value).startswith(f"{path}:{bad_line}: span 5000-5006 outside the document text")
    assert counts() == before
    assert not Collection.objects.filter(slug="ncbi-train").exists()


@committed
def test_offsets_not_matching_the_mention_text_are_refused(tmp_path, one_document_batches):
    path, bad_line = _file_with_bad_last_line(tmp_path, "200\t0\t6\tataxia\tSpecificDisease\tD001259")

    with pytest.raises(ParseError) as exc:
        import_pubtator(path, collection_slug="ncbi-train")

    assert str(exc.value).startswith(f"{path}:{bad_line}: span 0-6 reads 'Breast' in the text, the file says 'ataxia'")
    assert counts() == {name: 0 for name in counts()}


@committed
def test_non_numeric_offsets_are_refused(tmp_path):
    path, bad_line = _file_with_bad_last_line(tmp_path, "200\tx\t6\tataxia\tSpecificDisease\tD001259")
    with pytest.raises(ParseError, match="^" + re.escape(f"{path}:{bad_line}: offsets 'x' '6' are not integers")):
        import_pubtator(path, collection_slug="ncbi-train")
    assert counts() == {name: 0 for name in counts()}


@committed
def test_a_span_the_database_trigger_refuses_names_the_document_line(tmp_path, monkeypatch):
    """The reader checks spans already; should a bad one get past it, the trigger refuses it and the
    import still names the file and line and leaves nothing behind."""
    text = f"{T2} {A2}"
    good = PubTatorDocument(pmid="100", title=T1, abstract=A1, line=1)
    bad = PubTatorDocument(
        pmid="200", title=T2, abstract=A2, line=7,
        mentions=(GoldMention(0, 6, "ataxia", "Disease", "D001259", (("D001259",),)),),
    )
    assert text[0:6] != "ataxia"
    monkeypatch.setattr(importers, "iter_pubtator", lambda path: iter([good, bad]))
    path = write(tmp_path / "corpus.txt", "placeholder\n")

    with pytest.raises(ParseError) as exc:
        import_pubtator(path, collection_slug="c")

    assert str(exc.value).startswith(f"{path}:1: the database refused a document of lines 1-7")
    assert "does not match the document text" in str(exc.value)
    assert counts() == {name: 0 for name in counts()}


def test_unknown_dictionary_is_refused_before_anything_is_written(db, tmp_path):
    with pytest.raises(ValueError, match="no dictionary 'medic'"):
        import_pubtator(write(tmp_path / "c.txt", pubtator()), collection_slug="c", dictionary_slug="medic")
    assert not Collection.objects.exists()


# --- the command ------------------------------------------------------------------------------------------


def test_command_imports_and_reports(medic, tmp_path, capsys):
    path = write(tmp_path / "corpus.txt", pubtator())
    call_command("import_documents", str(path), "--collection", "ncbi-train", "--dictionary", "medic")

    captured = capsys.readouterr()
    assert "imported 3 documents (0 already there), 12 mentions, 15 gold links" in captured.out
    assert "warning: " in captured.err and "200#2" in captured.err
    assert Concept.objects.filter(links__isnull=False).distinct().count() == 5


def test_command_names_file_and_line_of_a_bad_file(db, tmp_path):
    path, bad_line = _file_with_bad_last_line(tmp_path, "200\t0\t6\tataxia")
    with pytest.raises(CommandError, match="^" + re.escape(f"{path}:{bad_line}: expected 'PMID start end text type")):
        call_command("import_documents", str(path), "--collection", "ncbi-train")
    assert not Collection.objects.exists()
