"""bench/corpus.py's synthetic PubMed corpus: real sentences recombined into abstracts that never existed.

The public abstracts this project holds (NCBI disease train + development, BC5CDR train + development: about 1,700)
are too few to measure a 100,000-abstract run, and the real baseline cannot be fetched here. So a corpus of any size
is made from them, deterministically from a seed:

- every source abstract is split into sentences (a simple rule: a ``.``, ``!`` or ``?`` followed by white space and
  a capital letter, a digit or an opening bracket), and all sentences are pooled;
- article ``i`` gets the PMID ``pmid_start + i`` (a synthetic range, 90,000,000 up by default, above every real
  PMID), a real title drawn from the sources, and ``k`` sentences drawn from the pool, ``k`` itself drawn from the
  sources' own sentence counts (so the length distribution is the real one);
- the articles are written as PubMed baseline XML (``PubmedArticleSet``), ``per_file`` to a ``.xml.gz`` file named
  like the baseline's (``synthetic{seed}n0001.xml.gz``); each file says in a comment that it is synthetic.

The text is real biomedical prose, so detection and linking do real work on it, but no abstract is one a person
wrote: it is SYNTHETIC, and every figure measured on it says so. Pure Python (no Django): tests import it.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape

from linker.data import iter_pubtator

SYNTHETIC_NOTE = ("SYNTHETIC corpus: real titles and real sentences of the NCBI disease and BC5CDR abstracts "
                  "recombined at random (seeded); no abstract in it was written by anyone")
SOURCES = ("ncbi-disease/NCBItrainset_corpus.txt", "ncbi-disease/NCBIdevelopset_corpus.txt",
           "bc5cdr/CDR_TrainingSet.PubTator.txt", "bc5cdr/CDR_DevelopmentSet.PubTator.txt")
PMID_START = 90_000_000
PER_FILE = 10_000
MANIFEST = "manifest.json"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])")


def split_sentences(text: str) -> list[str]:
    """The sentences of an abstract by the simple rule (a decimal point or "e.g. x" never ends one: the next
    character is not a capital)."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


@dataclass
class Pool:
    """What the corpus is drawn from: titles, sentences and sentences-per-abstract counts of the sources."""

    titles: list[str] = field(default_factory=list)
    sentences: list[str] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    abstracts: int = 0

    def add(self, title: str, abstract: str) -> None:
        sentences = split_sentences(abstract)
        if title:
            self.titles.append(title.strip())
        if sentences:
            self.sentences.extend(sentences)
            self.counts.append(len(sentences))
            self.abstracts += 1


def load_pool(files: Iterable[Path]) -> Pool:
    """The pool of the PubTator files (a PMID repeated within a file is taken once)."""
    pool = Pool()
    for path in files:
        if not path.is_file():
            raise FileNotFoundError(f"{path}: a source of the synthetic corpus is missing")
        for doc in iter_pubtator(path):
            if doc.occurrence == 1:
                pool.add(doc.title, doc.abstract)
    if not pool.sentences or not pool.titles:
        raise ValueError("the sources hold no abstract to draw sentences from")
    return pool


@dataclass(frozen=True)
class Spec:
    abstracts: int
    seed: int = 45
    per_file: int = PER_FILE
    pmid_start: int = PMID_START


def articles(pool: Pool, spec: Spec) -> Iterable[tuple[str, str, list[str]]]:
    """(PMID, title, sentences) of each synthetic article, in order; the same for the same pool and seed."""
    rng = random.Random(spec.seed)
    for i in range(spec.abstracts):
        title = rng.choice(pool.titles)
        k = rng.choice(pool.counts)
        yield str(spec.pmid_start + i), title, [rng.choice(pool.sentences) for _ in range(k)]


def article_xml(pmid: str, title: str, sentences: Sequence[str]) -> str:
    return (f'<PubmedArticle><MedlineCitation Status="MEDLINE" Owner="NLM"><PMID Version="1">{pmid}</PMID>'
            f'<Article PubModel="Print"><ArticleTitle>{escape(title)}</ArticleTitle><Abstract><AbstractText>'
            f"{escape(' '.join(sentences))}</AbstractText></Abstract></Article></MedlineCitation>"
            "<PubmedData><PublicationStatus>ppublish</PublicationStatus></PubmedData></PubmedArticle>\n")


def build(pool: Pool, spec: Spec, out: Path) -> dict[str, object]:
    """Write the corpus's files into ``out`` (and its manifest); what was written. The bytes are the same for the
    same pool and spec (gzip's header carries no time)."""
    out.mkdir(parents=True, exist_ok=True)
    files: list[dict[str, object]] = []
    sentence_counts: list[int] = []
    chars = 0
    handle: _File | None = None
    try:
        for i, (pmid, title, sentences) in enumerate(articles(pool, spec)):
            if i % spec.per_file == 0:
                if handle is not None:
                    handle.close()
                handle = _File(out / f"synthetic{spec.seed}n{i // spec.per_file + 1:04d}.xml.gz")
                files.append({"name": handle.path.name, "articles": 0})
            assert handle is not None
            handle.write(article_xml(pmid, title, sentences))
            files[-1]["articles"] = int(str(files[-1]["articles"])) + 1
            sentence_counts.append(len(sentences))
            chars += len(title) + 1 + sum(len(s) + 1 for s in sentences) - 1
    finally:
        if handle is not None:
            handle.close()
    for f in files:
        path = out / str(f["name"])
        f["bytes"] = path.stat().st_size
        f["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    manifest = {
        "synthetic": True, "note": SYNTHETIC_NOTE, "spec": asdict(spec),
        "pool": {"abstracts": pool.abstracts, "titles": len(pool.titles), "sentences": len(pool.sentences),
                 "mean_sentences_per_abstract": round(sum(pool.counts) / len(pool.counts), 2)},
        "articles": spec.abstracts, "sentences": sum(sentence_counts),
        "mean_sentences_per_abstract": round(sum(sentence_counts) / max(1, len(sentence_counts)), 2),
        "mean_chars_per_abstract": round(chars / max(1, spec.abstracts)), "files": files,
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def built(out: Path, spec: Spec) -> dict[str, object] | None:
    """The manifest of a corpus already built in ``out`` with this spec (its files all there), else None."""
    try:
        manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if manifest.get("spec") != asdict(spec):
        return None
    files = manifest.get("files") or []
    if not all((out / f["name"]).is_file() and (out / f["name"]).stat().st_size == f["bytes"] for f in files):
        return None
    return dict(manifest)


class _File:
    """One ``.xml.gz`` of the corpus being written: its header, its articles, its closing tag."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.raw = open(path, "wb")  # noqa: SIM115 - closed by close()
        self.gz = gzip.GzipFile(filename="", mode="wb", fileobj=self.raw, compresslevel=6, mtime=0)
        self.gz.write(b'<?xml version="1.0" encoding="utf-8"?>\n'
                      b'<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2024//EN" '
                      b'"https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_240101.dtd">\n'
                      + f"<!-- {SYNTHETIC_NOTE} -->\n".encode() + b"<PubmedArticleSet>\n")

    def write(self, xml: str) -> None:
        self.gz.write(xml.encode("utf-8"))

    def close(self) -> None:
        self.gz.write(b"</PubmedArticleSet>\n")
        self.gz.close()
        self.raw.close()
