"""A PubMed file is streamed (issue #45): reading a generated 50,000-article ``.xml.gz`` keeps the process's
resident memory flat (each article is cleared once read), and the byte scan for the progress bar counts them."""

from __future__ import annotations

import gc
import gzip
import os
from pathlib import Path

from webapp.corpus.formats.pubmed import Article, Deletion, count_articles, iter_pubmed

ARTICLES = 50_000
ABSTRACT = "Carriers of the variant had a raised risk of disease in every cohort studied. " * 6


def _write(path: Path, n: int) -> None:
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=1) as fh:
        fh.write('<?xml version="1.0" encoding="utf-8"?>\n<PubmedArticleSet>\n')
        for pmid in range(1, n + 1):
            fh.write(
                f"<PubmedArticle><MedlineCitation><PMID Version=\"1\">{pmid}</PMID><Article>"
                f"<ArticleTitle>Article {pmid}.</ArticleTitle><Abstract><AbstractText Label=\"RESULTS\">{ABSTRACT}"
                "</AbstractText></Abstract></Article></MedlineCitation><PubmedData/></PubmedArticle>\n"
            )
        fh.write("<DeleteCitation><PMID Version=\"1\">7</PMID><PMID Version=\"1\">8</PMID></DeleteCitation>\n")
        fh.write("</PubmedArticleSet>\n")


def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def test_a_large_file_is_read_in_flat_memory(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "pubmed24n9999.xml.gz"
    _write(path, ARTICLES)
    assert count_articles(path) == ARTICLES + 1
    gc.collect()
    articles, deletions, peak, base = 0, [], 0.0, 0.0
    for item in iter_pubmed(path):
        if isinstance(item, Deletion):
            deletions.append(item)
            continue
        assert isinstance(item, Article)
        articles += 1
        if articles == 1_000:
            base = _rss_mb()
        elif articles % 1_000 == 0:
            peak = max(peak, _rss_mb())
    assert articles == ARTICLES
    assert [(d.pmids, d.position) for d in deletions] == [(("7", "8"), ARTICLES + 1)]
    # The file is ~27 MB of XML; a tree kept whole would grow by well over 100 MB.
    assert peak - base < 25, f"resident memory grew by {peak - base:.0f} MB while reading"


def test_start_at_reads_past_committed_items(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "small.xml.gz"
    _write(path, 5)
    items = list(iter_pubmed(path, start_at=3))
    assert [i.position for i in items] == [4, 5, 6]
    assert [i.record.external_id for i in items if isinstance(i, Article)] == ["4", "5"]
