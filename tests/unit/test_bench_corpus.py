"""bench/corpus_build.py's synthetic PubMed corpus (issue #45), from a tiny PubTator fixture written here: the same
seed gives the same bytes, the files are PubMed XML that the project's PubMed reader reads back, every abstract is
made of the sources' sentences in the sources' counts, and each file says it is synthetic."""

from __future__ import annotations

import gzip
import importlib
from pathlib import Path

import pytest

from webapp.corpus.formats.pubmed import count_articles, iter_pubmed

build = importlib.import_module("bench.corpus_build")

PUBTATOR = """\
111|t|Hereditary breast cancer in young women.
111|a|Mutations in BRCA1 raise the risk of breast cancer. Carriers were followed for 10.5 years. Was the risk higher? (The answer was yes.)
111\t11\t24\tbreast cancer\tDisease\tD001943

222|t|Cisplatin & the kidney: <acute> injury.
222|a|Cisplatin caused acute kidney injury in 12 of 40 patients. Hydration did not prevent it.

333|t|Diabetes after transplantation.
333|a|New-onset diabetes was seen in a third of recipients.

"""


@pytest.fixture
def pool(tmp_path: Path) -> object:
    source = tmp_path / "tiny.PubTator.txt"
    source.write_text(PUBTATOR, encoding="utf-8")
    return build.load_pool([source])


def test_sentences_split_at_sentence_ends_only() -> None:
    assert build.split_sentences("Risk rose 10.5 fold. It fell (p < 0.01) after. Why? [Unknown] reasons.") == [
        "Risk rose 10.5 fold.", "It fell (p < 0.01) after.", "Why?", "[Unknown] reasons."]


def test_pool_holds_the_sources_titles_sentences_and_counts(pool: object) -> None:
    assert pool.abstracts == 3 and len(pool.titles) == 3
    assert sorted(pool.counts) == [1, 2, 4]
    assert "Was the risk higher?" in pool.sentences and "(The answer was yes.)" in pool.sentences


def test_the_same_seed_writes_the_same_bytes_and_another_seed_other_ones(pool: object, tmp_path: Path) -> None:
    spec = build.Spec(abstracts=25, seed=7, per_file=10)
    first = build.build(pool, spec, tmp_path / "a")
    again = build.build(pool, spec, tmp_path / "b")
    other = build.build(pool, build.Spec(abstracts=25, seed=8, per_file=10), tmp_path / "c")
    assert [f["sha256"] for f in first["files"]] == [f["sha256"] for f in again["files"]]
    assert [f["sha256"] for f in first["files"]] != [f["sha256"] for f in other["files"]]
    assert [f["articles"] for f in first["files"]] == [10, 10, 5]
    assert build.built(tmp_path / "a", spec) == first
    assert build.built(tmp_path / "a", build.Spec(abstracts=26, seed=7, per_file=10)) is None


def test_the_files_are_pubmed_xml_the_reader_parses_into_the_sources_sentences(pool: object, tmp_path: Path) -> None:
    spec = build.Spec(abstracts=30, seed=3, per_file=12, pmid_start=90_000_000)
    manifest = build.build(pool, spec, tmp_path)
    records = []
    for f in manifest["files"]:
        path = tmp_path / f["name"]
        assert path.name.endswith(".xml.gz") and count_articles(path) == f["articles"]
        assert build.SYNTHETIC_NOTE.encode() in gzip.decompress(path.read_bytes())
        records += [item.record for item in iter_pubmed(path)]
    assert [r.external_id for r in records] == [str(90_000_000 + i) for i in range(30)]
    sentences = set(pool.sentences)
    drawn = []
    for record, (pmid, title, parts) in zip(records, build.articles(pool, spec), strict=True):
        assert record.external_id == pmid and record.title == title and title in pool.titles
        assert record.text == f"{title} {' '.join(parts)}"  # escaped markup (&, <) read back as it was
        assert set(parts) <= sentences and len(parts) in pool.counts
        drawn.append(len(parts))
    assert manifest["sentences"] == sum(drawn) and manifest["synthetic"] is True
    assert "Cisplatin & the kidney: <acute> injury." in {r.title for r in records}


def test_a_missing_source_says_which(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="absent.txt"):
        build.load_pool([tmp_path / "absent.txt"])
