"""PubMed baseline and update files (issue #45): an update's changed abstract replaces the text and drops the
stale mentions, an unchanged article writes nothing, a new PMID is added, a DeleteCitation removes its document;
documents curators decided on are kept unless the update is forced (then the audit log says so)."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from webapp.audit.models import AuditEvent
from webapp.corpus.formats.services import import_documents
from webapp.corpus.models import Document, Mention
from webapp.curation.services.decisions import decide

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pubmed"
BASELINE, UPDATE = FIXTURES / "baseline.xml", FIXTURES / "update.xml"


def _gz(src: Path, folder: Path) -> Path:
    out = folder / (src.stem + ".xml.gz")
    with open(src, "rb") as fh, gzip.open(out, "wb") as gz:
        shutil.copyfileobj(fh, gz)
    return out


def _texts(slug: str = "pm") -> dict[str, str]:
    return dict(Document.objects.filter(collection__slug=slug).values_list("external_id", "text"))


def _mention(pmid: str, start: int, end: int) -> Mention:
    doc = Document.objects.get(collection__slug="pm", external_id=pmid)
    return Mention.objects.create(document=doc, start=start, end=end, text=doc.text[start:end], mention_type="Disease")


def test_baseline_gz_is_read_with_labels_and_passages(tmp_path) -> None:  # type: ignore[no-untyped-def]
    report = import_documents(_gz(BASELINE, tmp_path), "pubmed-xml", collection_slug="pm")
    assert (report.new, report.replaced, report.unchanged, report.deleted) == (5, 0, 0, 0)
    doc = Document.objects.get(collection__slug="pm", external_id="10000001")
    title = "Familial adenomatous polyposis in two kindreds."
    abstract = "BACKGROUND: Colorectal cancer arises in APC carriers. RESULTS: Both kindreds carried truncating mutations."
    assert (doc.title, doc.text) == (title, f"{title} {abstract}")
    assert doc.metadata["passages"] == [
        {"type": "title", "offset": 0, "length": len(title)},
        {"type": "abstract", "offset": len(title) + 1, "length": len(abstract)},
    ]
    assert _texts()["10000005"] == "Cystic fibrosis transmembrane regulator variants."  # a title alone


def test_update_with_a_deletion_and_a_changed_abstract() -> None:
    import_documents(BASELINE, "pubmed-xml", collection_slug="pm")
    stale = _mention("10000002", 0, 20)  # on the text the update changes
    kept = _mention("10000003", 0, 18)  # on the text the update repeats as it was
    report = import_documents(UPDATE, "pubmed-xml", collection_slug="pm")
    assert (report.new, report.replaced, report.unchanged, report.deleted, report.kept_curated) == (1, 1, 1, 1, 0)
    assert report.replaced_ids == ["10000002"] and report.deleted_ids == ["10000004"]
    assert "1 new, 1 replaced, 1 unchanged, 1 deleted" in report.message
    assert any("text changed and was replaced" in w and "10000002" in w for w in report.warnings)
    texts = _texts()
    assert sorted(texts) == ["10000001", "10000002", "10000003", "10000005", "10000006"]
    assert texts["10000002"].endswith("have a twofold risk of breast cancer.")
    assert not Mention.objects.filter(pk=stale.pk).exists()  # its offsets were into the old text
    assert Mention.objects.filter(pk=kept.pk).exists()
    again = import_documents(UPDATE, "pubmed-xml", collection_slug="pm")  # the same update twice: nothing to do
    assert (again.new, again.replaced, again.unchanged, again.deleted) == (0, 0, 3, 0)


def test_curated_documents_are_kept_unless_forced(alice) -> None:  # type: ignore[no-untyped-def]
    import_documents(BASELINE, "pubmed-xml", collection_slug="pm")
    for pmid, action in (("10000002", "nil"), ("10000004", "reject")):  # a rejected span leaves no curator link
        mention = _mention(pmid, 0, 10)
        decide(user=alice, mention_id=mention.pk, action=action, seen_updated_at=mention.updated_at, teach=False)
    report = import_documents(UPDATE, "pubmed-xml", collection_slug="pm")
    assert (report.replaced, report.deleted, report.kept_curated) == (0, 0, 2)
    assert sorted(report.kept_ids) == ["10000002", "10000004"]
    assert any("kept as they were" in w for w in report.warnings)
    assert "10000004" in _texts() and "raised risk" in _texts()["10000002"]

    forced = import_documents(UPDATE, "pubmed-xml", collection_slug="pm", force=True)
    assert (forced.replaced, forced.deleted, forced.kept_curated) == (1, 1, 0)
    assert "10000004" not in _texts()
    events = AuditEvent.objects.filter(action__in=["document.withdrawn", "document.replaced"])
    assert {e.action: e.before for e in events} == {
        "document.replaced": {"curator_links": 1, "gold_links": 0, "decided_mentions": 1},
        "document.withdrawn": {"curator_links": 0, "gold_links": 0, "decided_mentions": 1},
    }


def test_gold_annotated_documents_are_kept_too(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # A PubTator gold corpus's abstract, which PubMed's XML writes with its section labels.
    gold = tmp_path / "gold.txt"
    gold.write_text("10000002|t|Ataxia-telangiectasia and breast cancer risk.\n10000002|a|Carriers have a raised risk.\n"
                    "10000002\t0\t21\tAtaxia-telangiectasia\tDisease\tD001260\n\n")
    import_documents(gold, "pubtator", collection_slug="pm")
    report = import_documents(UPDATE, "pubmed-xml", collection_slug="pm")
    assert (report.replaced, report.kept_curated, report.kept_ids) == (0, 1, ["10000002"])
    assert Mention.objects.filter(document__external_id="10000002").count() == 1


def test_force_is_refused_for_formats_read_whole(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "a.txt"
    path.write_text("1|t|Gout\n1|a|x\n\n")
    with pytest.raises(ValueError, match="force applies to PubMed XML, BioC, JSON Lines and PubAnnotation imports only"):
        import_documents(path, "pubtator", collection_slug="pm", force=True)
