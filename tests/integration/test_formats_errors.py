"""A malformed file is refused whole, with an error naming the file and the line or element."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from linker.data import ParseError
from webapp.corpus.formats import FormatError
from webapp.corpus.formats.services import import_documents
from webapp.corpus.models import Collection, Document

pytestmark = pytest.mark.django_db

GOOD_JSONL = '{"id": "1", "text": "Asthma attack.", "mentions": [{"start": 0, "end": 6, "type": "Disease", "links": [{"concept_id": "D001249"}]}]}\n'


def _nothing_written(slug: str) -> bool:
    return not Document.objects.filter(collection__slug=slug).exists()


def test_pubtator_span_that_does_not_match_the_text_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_text("1|t|Asthma attack\n1|a|In children.\n1\t0\t6\tAsthma\tDisease\tD1\n\n2|t|Gout\n2|a|x\n2\t0\t4\tGOUT!\tDisease\tD2\n")
    with pytest.raises(ParseError, match=r"bad\.txt:7: span 0-4 reads 'Gout'"):
        import_documents(path, "pubtator", collection_slug="p")
    assert _nothing_written("p")


def test_jsonl_error_on_the_second_line_leaves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "docs.jsonl"
    path.write_text(GOOD_JSONL + '{"id": "2", "text": "Gout.", "mentions": [{"start": 0, "end": 40}]}\n')
    with pytest.raises(FormatError, match=r"docs\.jsonl: line 2: mention 1: span 0-40 outside the text"):
        import_documents(path, "jsonl", collection_slug="j")
    assert _nothing_written("j")
    assert not Collection.objects.filter(slug="j").exists()


def test_jsonl_that_is_not_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "docs.jsonl"
    path.write_text(GOOD_JSONL + "\n{not json\n")
    with pytest.raises(FormatError, match=r"docs\.jsonl: line 3: not JSON"):
        import_documents(path, "jsonl", collection_slug="j")


def test_bioc_annotation_text_mismatch_names_document_and_annotation(tmp_path: Path) -> None:
    path = tmp_path / "c.xml"
    path.write_text(
        "<?xml version='1.0' encoding='utf-8'?><collection><source/><date/><key/>"
        "<document><id>42</id><passage><offset>0</offset><text>Asthma attack</text>"
        '<annotation id="T9"><infon key="type">Disease</infon><location offset="0" length="6"/><text>Gout!!</text></annotation>'
        "</passage></document></collection>"
    )
    with pytest.raises(FormatError, match=r"c\.xml: document 42 / annotation T9: span 0-6 reads 'Asthma'"):
        import_documents(path, "bioc-xml", collection_slug="b")
    assert _nothing_written("b")


def test_malformed_bioc_xml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.xml"
    path.write_text("<?xml version='1.0'?>\n<collection>\n<document>\n</collection>\n")
    with pytest.raises(FormatError, match=r"broken\.xml: line \d+: not well-formed XML"):
        import_documents(path, "bioc-xml", collection_slug="b")


def test_bioc_json_that_is_not_bioc_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text('{"documents": [{"id": "1"}]}')
    with pytest.raises(FormatError, match=r"c\.json: "):
        import_documents(path, "bioc-json", collection_slug="b")


def test_brat_bad_line_names_the_ann_file_and_line(tmp_path: Path) -> None:
    archive = tmp_path / "brat.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("d1.txt", "Asthma attack")
        z.writestr("d1.ann", "T1\tDisease 0 6\tAsthma\nN1\tReference T1 MESH:D001249\tAsthma\n")
        z.writestr("d2.txt", "Gout")
        z.writestr("d2.ann", "T1\tDisease 0 4\tGout\nT2\tDisease zero four\tGout\n")
    with pytest.raises(FormatError, match=r"brat\.zip/d2\.ann: line 2: expected 'T<n>"):
        import_documents(archive, "brat", collection_slug="r")
    assert _nothing_written("r")


def test_brat_folder_imports_with_references(tmp_path: Path) -> None:
    folder = tmp_path / "standoff"
    folder.mkdir()
    (folder / "d1.txt").write_text("Line one\nAsthma attack", newline="")
    (folder / "d1.ann").write_text("T1\tDisease 9 15\tAsthma\nN1\tReference T1 MESH:D001249\tAsthma\n#1\tAnnotatorNotes T1\tnote\n")
    report = import_documents(folder, "brat", collection_slug="r")
    assert (report.documents, report.mentions, report.links) == (1, 1, 1)
    mention = Document.objects.get(external_id="d1").mentions.get()
    assert (mention.start, mention.end, mention.text) == (9, 15, "Asthma")
    assert mention.links.get().concept_ref == "MESH:D001249"


def test_unknown_dictionary_is_a_clear_value_error(tmp_path: Path) -> None:
    path = tmp_path / "docs.jsonl"
    path.write_text(GOOD_JSONL)
    with pytest.raises(ValueError, match="no dictionary 'nope'"):
        import_documents(path, "jsonl", collection_slug="j", dictionary_slug="nope")


def test_reimporting_skips_documents_already_there(tmp_path: Path) -> None:
    path = tmp_path / "docs.jsonl"
    path.write_text(GOOD_JSONL)
    import_documents(path, "jsonl", collection_slug="j")
    again = import_documents(path, "jsonl", collection_slug="j")
    assert (again.documents, again.skipped_documents, again.created) == (0, 1, False)
