"""Benchmark: a 3-million-name dictionary (a generated UMLS release) imported, indexed and served; print one JSON object.

    python bench/scale.py [--names 3000000] [--seed 19] [--stages generate,import,search,index,panel,medic]
        [--kinds hnsw,ivfpq] [--mentions 200] [--searches 300] [--recall-queries 500] [--keep-db NAME] [--no-record]

Stages (each selectable; later ones need the earlier ones' data, in this run or in a database kept with --keep-db):

* ``generate``: a synthetic UMLS release folder (META/MRCONSO.RRF, MRSTY.RRF, MRREL.RRF, release.dat) of ``--names``
  distinct names under var/bench-scale/, deterministic by ``--seed`` and reused when params.json beside it says the
  same. It starts with the real CTD MEDIC concepts, names and ids (MeSH/OMIM/DO ids as source codes, so BC5CDR's gold
  ids resolve to them), then fills up with synthetic concepts: a real MEDIC/HPO/DOID concept's names with one or two
  words swapped for other words of the same names (realistic lengths, vocabulary and synonyms per concept), a
  realistic semantic type, and a PAR edge to an earlier concept.
* ``import``: ``manage.py import_dictionary <folder> --slug umls-scale`` timed, peak RSS of this process, the
  PostgreSQL sizes of the vocabulary tables; BC5CDR dev imported as the collection linked to it.
* ``search``: concept search (``/curate/mentions/<id>/search/?q=``) over all names, the queries of bench/curation.py.
* ``index``: the trained student (BNE, characters + words, trained here as README's "Fast encoders" does, reused
  from var/bench-scale/encoders/) encodes every name; the linker is built with ``RetrievalConfig(sparse_search=False)``
  (tf-idf only scores the dense candidates) and each ANN kind of ``--kinds``: build time, files on disk, RSS of a
  fresh process after loading it, recall@10 against exact search. MiniLM's names/s on 3,000 of the names gives the
  projected CPU time to encode them all with the transformer.
* ``panel``: each kind activated in turn, the candidate panel timed on BC5CDR dev mentions exactly as
  bench/curation.py does (first and repeat view), Acc@1/Acc@5 of its stored suggestions against the gold links.
* ``medic``: the real MEDIC dictionary alone with MiniLM zero-shot dense + tf-idf (flat index, ``build_index
  --dictionary medic --activate``) and its panel.

Goals (issue #19): panel p95 < 250 ms and concept search p95 < 100 ms at 3M names, index memory < 4 GB, MEDIC-size
dense panel p95 < 100 ms. The figures are appended to bench/RESULTS.md with the machine and date (append only).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from linker.dictionary_formats import iter_medic_tsv, iter_obo  # noqa: E402 (after the path is set)

RESULTS = ROOT / "bench" / "RESULTS.md"
WORK = ROOT / "var" / "bench-scale"
STAGES = ("generate", "import", "search", "index", "panel", "medic")
SLUG = "umls-scale"
COLLECTION = "bc5cdr-dev"
MEDIC_COLLECTION = "bc5cdr-dev-medic"
MEDIC = "medic/CTD_diseases.tsv.gz"
TEMPLATES = ("hpo/hp.obo.gz", "disease-ontology/doid.obo.gz")
DEV = "bc5cdr/CDR_DevelopmentSet.PubTator.txt"
TRAIN = "bc5cdr/CDR_TrainingSet.PubTator.txt"
GOALS = {"panel_p95_ms": 250, "search_p95_ms": 100, "index_memory_gb": 4.0, "medic_panel_p95_ms": 100}
# Bumped whenever the generator's output changes, so that an older folder is not reused.
GENERATOR_VERSION = 1
RELEASE_LABEL = "2099SC"

# Semantic types of disorders in the Metathesaurus (TUI, tree number, label) with rough shares of its disorder CUIs.
SEMANTIC_TYPES = (
    ("T047", "B2.2.1.2.1", "Disease or Syndrome", 0.42),
    ("T191", "B2.2.1.2.1.2", "Neoplastic Process", 0.14),
    ("T184", "A2.2.2", "Sign or Symptom", 0.10),
    ("T019", "A1.2.2.1", "Congenital Abnormality", 0.08),
    ("T037", "B2.3", "Injury or Poisoning", 0.10),
    ("T046", "B2.2.1.2", "Pathologic Function", 0.10),
    ("T048", "B2.2.1.2.1.1", "Mental or Behavioral Dysfunction", 0.06),
)
SECOND_TYPE_SHARE = 0.05  # concepts with two semantic types
SYNTHETIC_SAB = "SCALE"
# Words swapped in a synthetic concept's names: letters only, at least four (so "of", "the", "type" stay).
_WORD = re.compile(r"[A-Za-z]{4,}")


# --- the generated release --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RealConcept:
    """A MEDIC concept as the generator writes it: its names (preferred first, exact duplicates dropped), its source
    codes (the primary id first) and its parents' ids."""

    concept_id: str
    names: tuple[str, ...]
    codes: tuple[str, ...]
    parents: tuple[str, ...]


@dataclass
class Sources:
    medic: list[RealConcept]
    templates: list[tuple[str, ...]]  # names of every MEDIC/HPO/DOID concept: what a synthetic concept is made from
    words: list[str]  # content words as they occur (a word twice as frequent is drawn twice as often)


def _clean(name: str) -> str:
    # RRF is pipe-delimited; no dictionary name here has a pipe or a line break, but one would break the file.
    return " ".join(name.replace("|", "/").split())


def load_sources(data: Path) -> Sources:
    """The real names the generator draws on: CTD MEDIC (its concepts kept whole), HPO and DOID (templates only)."""
    medic: list[RealConcept] = []
    templates: list[tuple[str, ...]] = []
    for record in iter_medic_tsv(data / MEDIC):
        names = tuple(n for n in dict.fromkeys(_clean(n) for n in record.all_names()) if n)
        medic.append(RealConcept(record.concept_id, names, (record.concept_id, *record.alt_ids), record.parents))
        templates.append(names)
    for rel in TEMPLATES:
        for record in iter_obo(data / rel):
            names = tuple(n for n in dict.fromkeys(_clean(n) for n in record.all_names()) if n)
            if names:
                templates.append(names)
    words = [w.lower() for names in templates for name in names for w in _WORD.findall(name)]
    return Sources(medic, templates, words)


def _swap(word: str, replacement: str) -> str:
    if word.isupper() and len(word) > 1:
        return replacement.upper()
    return replacement.capitalize() if word[:1].isupper() else replacement


def recombine(names: Sequence[str], rng: random.Random, words: Sequence[str]) -> list[str]:
    """A synthetic concept's names from a real concept's: one or two words of its preferred name swapped for other
    words of the pool in every name that has them, so its synonyms stay synonyms of each other; a synonym without
    any of them gets one of its own words swapped (or a word added, for an abbreviation), so no name is left real."""
    mapping: dict[str, str] = {}
    preferred_words = list(dict.fromkeys(w.lower() for w in _WORD.findall(names[0])))
    for w in rng.sample(preferred_words, min(len(preferred_words), 1 if rng.random() < 0.6 else 2)):
        mapping[w] = rng.choice(words)

    def apply(name: str) -> str:
        return _WORD.sub(lambda m: _swap(m.group(0), mapping[m.group(0).lower()]) if m.group(0).lower() in mapping
                         else m.group(0), name)

    out: dict[str, None] = {}
    for name in names:
        new = apply(name)
        if new == name:
            own = _WORD.findall(name)
            if own:
                mapping[rng.choice(own).lower()] = rng.choice(words)
                new = apply(name)
            else:
                new = f"{name} {rng.choice(words)}"
        out.setdefault(new, None)
    return list(out)


def _semantic_types(rng: random.Random) -> list[tuple[str, str, str]]:
    weights = [w for *_, w in SEMANTIC_TYPES]
    first = rng.choices(SEMANTIC_TYPES, weights)[0]
    chosen = [first[:3]]
    if rng.random() < SECOND_TYPE_SHARE:
        second = rng.choices(SEMANTIC_TYPES, weights)[0]
        if second[0] != first[0]:
            chosen.append(second[:3])
    return chosen


class _RrfWriter:
    """Streams the three RRF files; identifiers are counters (CUI C + 7 digits, AUI A + 8, unique LUI/SUI per row)."""

    def __init__(self, meta: Path) -> None:
        self.conso: IO[str] = open(meta / "MRCONSO.RRF", "w", encoding="utf-8", newline="\n")
        self.sty: IO[str] = open(meta / "MRSTY.RRF", "w", encoding="utf-8", newline="\n")
        self.rel: IO[str] = open(meta / "MRREL.RRF", "w", encoding="utf-8", newline="\n")
        self.rows = self.rels = self.stys = 0
        self.preferred_aui: list[int] = []  # concept index -> its preferred atom's AUI number

    def close(self) -> None:
        for fh in (self.conso, self.sty, self.rel):
            fh.close()

    def concept(self, names: Sequence[str], codes: Sequence[tuple[str, str]], types: list[tuple[str, str, str]]) -> str:
        """One concept's rows: every name under the first code; each further code on a row with the preferred name
        (the same string from another source, as in the Metathesaurus: the importer keeps it once)."""
        index = len(self.preferred_aui)
        cui = f"C{index + 1:07d}"
        self.preferred_aui.append(self.rows + 1)
        sab, code = codes[0]
        rows = [(name, sab, code, i == 0) for i, name in enumerate(names)]
        rows += [(names[0], s, c, False) for s, c in codes[1:]]
        lines = []
        for name, s, c, preferred in rows:
            self.rows += 1
            n = self.rows
            ts, tty = ("P", "PT") if preferred else ("S", "SY")
            lines.append(f"{cui}|ENG|{ts}|L{n:07d}|PF|S{n:07d}|Y|A{n:08d}||{c}|{c}|{s}|{tty}|{c}|{name}|0|N||\n")
        self.conso.write("".join(lines))
        for tui, stn, label in types:
            self.stys += 1
            self.sty.write(f"{cui}|{tui}|{stn}|{label}|AT{self.stys:08d}||\n")
        return cui

    def parent(self, child: int, parent: int, sab: str) -> None:
        """A PAR row: concept ``parent`` (an index) is a parent of concept ``child``."""
        self.rels += 1
        self.rel.write(f"C{child + 1:07d}|A{self.preferred_aui[child]:08d}|AUI|PAR|C{parent + 1:07d}|"
                       f"A{self.preferred_aui[parent]:08d}|AUI|isa|R{self.rels:08d}||{sab}|{sab}|||N||\n")


def _source_code(concept_id: str) -> tuple[str, str]:
    """``MESH:D003920`` -> (MESH, D003920), ``DO:DOID:2355`` -> (DO, DOID:2355). The importer makes ``SAB:CODE`` an
    alternative id, so the MEDIC spelling comes back whole and BC5CDR's ``D003920`` resolves to it (the resolver
    tries ``MESH:D003920``; it knows no ``MSH:`` spelling, the Metathesaurus's own SAB for MeSH)."""
    sab, _, code = concept_id.partition(":")
    return sab, code


def write_release(folder: Path, names: int, seed: int, sources: Sources) -> dict[str, Any]:
    """Write a release of exactly ``names`` distinct (concept, name) pairs into ``folder``; return what it holds."""
    if names < 1:
        raise ValueError("--names must be at least 1")
    rng = random.Random(seed)
    meta = folder / "META"
    meta.mkdir(parents=True, exist_ok=True)
    (folder / "release.dat").write_text(f"umls.release.name={RELEASE_LABEL}\n"
                                        "umls.release.description=Generated by bench/scale.py (no UMLS content)\n")
    writer = _RrfWriter(meta)
    written = 0
    synonyms_hist: dict[int, int] = {}
    name_chars = 0
    medic_concepts = 0
    try:
        index_of: dict[str, int] = {}
        kept: list[RealConcept] = []
        for concept in sources.medic:
            if written >= names:
                break
            take = concept.names[: names - written]
            index_of[concept.concept_id] = len(writer.preferred_aui)
            writer.concept(take, [_source_code(c) for c in concept.codes], _semantic_types(rng))
            kept.append(concept)
            written += len(take)
            name_chars += sum(len(n) for n in take)
            synonyms_hist[len(take)] = synonyms_hist.get(len(take), 0) + 1
        medic_concepts = len(kept)
        for concept in kept:  # MEDIC's own hierarchy, where both ends were written
            for parent in concept.parents:
                if parent in index_of:
                    writer.parent(index_of[concept.concept_id], index_of[parent], _source_code(concept.concept_id)[0])
        while written < names:
            made = recombine(rng.choice(sources.templates), rng, sources.words)[: names - written]
            index = len(writer.preferred_aui)
            writer.concept(made, [(SYNTHETIC_SAB, f"SC{index + 1:08d}")], _semantic_types(rng))
            if index > 0:
                writer.parent(index, rng.randrange(index), SYNTHETIC_SAB)
            written += len(made)
            name_chars += sum(len(n) for n in made)
            synonyms_hist[len(made)] = synonyms_hist.get(len(made), 0) + 1
    finally:
        writer.close()
    concepts = len(writer.preferred_aui)
    sizes = {p.name: p.stat().st_size for p in sorted(meta.iterdir())}
    return {
        "names": written,
        "concepts": concepts,
        "medic_concepts": medic_concepts,
        "synthetic_concepts": concepts - medic_concepts,
        "mrconso_rows": writer.rows,
        "mrsty_rows": writer.stys,
        "mrrel_rows": writer.rels,
        "names_per_concept_mean": round(written / max(concepts, 1), 2),
        "names_per_concept_max": max(synonyms_hist, default=0),
        "name_chars_mean": round(name_chars / max(written, 1), 1),
        "bytes": sizes,
        "mb_total": round(sum(sizes.values()) / 1e6, 1),
    }


def generate(names: int, seed: int, data: Path, work: Path = WORK) -> tuple[Path, dict[str, Any]]:
    """The release folder for (names, seed): reused when its params.json matches, else written anew (into a
    ``.partial`` folder renamed when complete, so an interrupted run leaves nothing that looks finished)."""
    folder = work / f"release-{names}-s{seed}"
    params = {"names": names, "seed": seed, "generator": GENERATOR_VERSION}
    marker = folder / "params.json"
    if marker.is_file():
        stored = json.loads(marker.read_text())
        if stored.get("params") == params:
            return folder, {**stored["stats"], "reused": True, "generate_s": stored.get("generate_s")}
    t0 = time.perf_counter()
    sources = load_sources(data)
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    stats = write_release(partial, names, seed, sources)
    seconds = round(time.perf_counter() - t0, 1)
    (partial / "params.json").write_text(json.dumps({"params": params, "stats": stats, "generate_s": seconds}, indent=2))
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)
    return folder, {**stats, "reused": False, "generate_s": seconds}


# --- measuring ----------------------------------------------------------------------------------------------


def peak_rss_mb() -> float:
    """This process's peak resident set (ru_maxrss: kB on Linux)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def current_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def folder_mb(folder: Path) -> float:
    return round(sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6, 1)


# --- configuration -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    names: int = 3_000_000
    seed: int = 19
    stages: tuple[str, ...] = STAGES
    kinds: tuple[str, ...] = ("hnsw", "ivfpq")
    mentions: int = 200
    searches: int = 300
    recall_queries: int = 500
    data: Path = ROOT.parent / "shared" / "data"
    keep_db: str | None = None
    record: bool = True
    bne_minutes: float = 8.0
    ivf_nlist: int = 0
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def index_config(kind: str, ivf_nlist: int = 0) -> Any:
    """The served configurations: both quantised, with the float copy (pair scores, refinement) in float16.

    ``ivf_nlist`` 0 is the index's own choice (4 sqrt(n) lists, k-means on 256 vectors a list: at 3M names ~6,900
    lists trained on 1.8M vectors, which this CPU cannot do in a session); a smaller number trains in minutes."""
    from linker.index_kinds import IndexConfig

    configs = {
        "hnsw": IndexConfig(kind="hnsw", hnsw_storage="sq8", vector_dtype="float16"),
        "ivfpq": IndexConfig(kind="ivfpq", ivf_nlist=ivf_nlist, ivf_nprobe=16, pq_m=0, pq_bits=8, vector_dtype="float16"),
        "hnsw-flat": IndexConfig(kind="hnsw"),
        "flat": IndexConfig(kind="flat"),
    }
    if kind not in configs:
        raise SystemExit(f"unknown index kind {kind!r}; expected one of {', '.join(configs)}")
    return configs[kind]


# --- the run ------------------------------------------------------------------------------------------------


def main(cfg: Config) -> dict[str, Any]:
    missing = [rel for rel in (MEDIC, *TEMPLATES, DEV, TRAIN) if not (cfg.data / rel).is_file()]
    if missing:
        raise SystemExit(f"missing data files under {cfg.data}: {', '.join(missing)}")
    result: dict[str, Any] = {"benchmark": "scale", "date": datetime.now(UTC).isoformat(timespec="seconds"),
                              "names_requested": cfg.names, "seed": cfg.seed, "stages": list(cfg.stages),
                              "load_avg_1m_at_start": round(os.getloadavg()[0], 1), "goals": GOALS}
    folder = WORK  # the medic stage alone needs no generated release
    if set(cfg.stages) - {"medic"}:
        folder, generated = generate(cfg.names, cfg.seed, cfg.data)
        result["generate"] = {**generated, "folder": str(folder.relative_to(ROOT))}
    if set(cfg.stages) - {"generate"}:
        _with_django(cfg, folder, result)
    result["rss_peak_mb"] = peak_rss_mb()
    result["load_avg_1m_at_end"] = round(os.getloadavg()[0], 1)
    result["verdict"] = verdict(result)
    if cfg.record:
        append_results(result, cfg)
    return result


def _with_django(cfg: Config, folder: Path, result: dict[str, Any]) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.db import connection

    describe_machine = importlib.import_module("bench.import").describe_machine
    result["machine"] = describe_machine(connection)
    with _database(cfg) as name:
        result["database"] = name + (" (kept)" if cfg.keep_db else " (dropped at the end)")
        settings.ARTIFACT_ROOT = WORK / f"artifacts-{name}"
        try:
            if "import" in cfg.stages:
                result["import"] = stage_import(cfg, folder)
            if "search" in cfg.stages:
                result["search"] = stage_search(cfg)
            if "index" in cfg.stages:
                result["index"] = stage_index(cfg)
            if "panel" in cfg.stages:
                result["panel"] = stage_panel(cfg)
            if "medic" in cfg.stages:
                result["medic"] = stage_medic(cfg)
        finally:
            if not cfg.keep_db:
                shutil.rmtree(settings.ARTIFACT_ROOT, ignore_errors=True)


@contextmanager
def _database(cfg: Config) -> Iterator[str]:
    """A throwaway database (pid-suffixed, dropped at the end) as bench/curation.py makes, or with --keep-db a named
    one kept for the next run, so that a 3M import is paid once while the later stages are developed."""
    from django.db import connection

    original = connection.settings_dict["NAME"]
    name = cfg.keep_db or f"bench_scale_{os.getpid()}"
    connection.settings_dict.setdefault("TEST", {})["NAME"] = name
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False, keepdb=bool(cfg.keep_db))
    try:
        yield name
    finally:
        if not cfg.keep_db:
            connection.creation.destroy_test_db(original, verbosity=0)


def _scale_version() -> Any:
    from webapp.vocab.models import Dictionary

    dictionary = Dictionary.objects.filter(slug=SLUG).first()
    version = dictionary.latest_version() if dictionary is not None else None
    if version is None:
        raise SystemExit(f"no {SLUG} dictionary in this database: run the import stage first (with --keep-db to reuse it)")
    return version


def stage_import(cfg: Config, folder: Path) -> dict[str, Any]:
    from django.core.management import call_command
    from django.db import connection

    from webapp.corpus.models import Collection
    from webapp.vocab.models import Concept, Dictionary, HierarchyEdge, Name

    out: dict[str, Any] = {}
    if Dictionary.objects.filter(slug=SLUG).exists():
        out["note"] = "already imported in the kept database; not timed again"
    else:
        before = peak_rss_mb()
        rss_before = current_rss_mb()
        t0 = time.perf_counter()
        call_command("import_dictionary", str(folder), "--slug", SLUG, verbosity=0)
        out["import_s"] = round(time.perf_counter() - t0, 1)
        out["rss_peak_before_mb"], out["rss_peak_after_mb"] = before, peak_rss_mb()
        out["rss_before_mb"], out["rss_after_mb"] = rss_before, current_rss_mb()
    version = _scale_version()
    out["names"] = Name.objects.filter(concept__version=version).count()
    out["concepts"] = Concept.objects.filter(version=version).count()
    out["edges"] = HierarchyEdge.objects.filter(version=version).count()
    if "import_s" in out:
        out["names_per_s"] = round(out["names"] / out["import_s"])
    sizes: dict[str, Any] = {}
    with connection.cursor() as cursor:
        for model in (Name, Concept, HierarchyEdge):
            table = model._meta.db_table
            cursor.execute("SELECT pg_total_relation_size(%s), pg_relation_size(%s), pg_indexes_size(%s)",
                           [table, table, table])
            total, heap, indexes = cursor.fetchone()
            sizes[table] = {"total_mb": round(total / 1e6, 1), "table_mb": round(heap / 1e6, 1),
                            "indexes_mb": round(indexes / 1e6, 1)}
            cursor.execute("SELECT indexname, pg_relation_size(quote_ident(indexname)::regclass) FROM pg_indexes "
                           "WHERE tablename = %s ORDER BY 2 DESC", [table])
            sizes[table]["by_index_mb"] = {n: round(s / 1e6, 1) for n, s in cursor.fetchall()}
    out["postgres"] = sizes
    if not Collection.objects.filter(slug=COLLECTION).exists():
        t0 = time.perf_counter()
        call_command("import_documents", str(cfg.data / DEV), "--collection", COLLECTION, "--dictionary", SLUG,
                     verbosity=0)
        out["import_bc5cdr_dev_s"] = round(time.perf_counter() - t0, 1)
    out["gold"] = gold_resolution(COLLECTION)
    return out


def gold_resolution(collection: str) -> dict[str, int]:
    """How many Disease gold links of the collection resolved to a concept of its dictionary."""
    from webapp.corpus.models import Link

    links = Link.objects.filter(origin=Link.Origin.GOLD, mention__document__collection__slug=collection,
                                mention__mention_type="Disease", nil=False)
    return {"disease_gold_links": links.count(), "resolved": links.filter(concept__isnull=False).count()}


def _curator_client() -> Any:
    from django.contrib.auth.models import User

    curation = importlib.import_module("bench.curation")
    if User.objects.filter(username="bench-curator").exists():  # a kept database has it from an earlier run
        return curation._client_for_search()
    return curation._client()


def stage_search(cfg: Config) -> dict[str, Any]:
    from webapp.corpus.models import Mention

    curation = importlib.import_module("bench.curation")
    _scale_version()
    client = _curator_client()
    rng = random.Random(cfg.seed + 1)
    mentions = Mention.objects.filter(document__collection__slug=COLLECTION)
    texts = list(mentions.values_list("text", flat=True).distinct())
    mention = mentions.order_by("pk").first()
    queries = curation._queries(texts, rng, cfg.searches)
    url = f"/curate/mentions/{mention.pk}/search/"
    curation._timed(client, url, q=queries[0])
    ms = [curation._timed(client, url, q=q) for q in queries]
    kinds = ("first 3 chars", "first 5 chars", "whole mention", "one transposition")
    return {"all": curation.summary(ms),
            "by_kind": {kind: curation.summary(ms[i::4]) for i, kind in enumerate(kinds) if ms[i::4]}}


# --- the student encoder ---------------------------------------------------------------------------------------


def student_encoder(cfg: Config) -> tuple[Path, dict[str, Any]]:
    """BNE (fast sizes, 16 negatives) on fastText word vectors, trained here on BC5CDR train and CTD MEDIC as
    README's "Fast encoders" trains it, with a time budget; reused from var/bench-scale/encoders/ when there."""
    encoders = WORK / "encoders"
    vectors, bne = encoders / "wv-disease", encoders / "bne"
    info: dict[str, Any] = {"kind": "bne", "artifact": str(bne.relative_to(ROOT))}
    python = sys.executable
    if not (vectors / "wordvectors.json").exists():
        t0 = time.perf_counter()
        subprocess.run([python, "-m", "linker", "train-word-vectors", "--text", str(cfg.data / TRAIN),
                        "--dictionary", str(cfg.data / MEDIC), "--out", str(vectors)], check=True, cwd=ROOT,
                       stdout=subprocess.DEVNULL)
        info["word_vectors_s"] = round(time.perf_counter() - t0, 1)
    if not (bne / "config.json").exists():
        t0 = time.perf_counter()
        subprocess.run([python, "-m", "linker", "train", "--method", "bne", "--word-vectors", str(vectors),
                        "--dictionary", str(cfg.data / MEDIC), "--train", str(cfg.data / TRAIN),
                        "--mention-types", "Disease", "--bne-size", "fast", "--negatives", "16",
                        "--epoch-names", "16384", "--max-minutes", str(cfg.bne_minutes), "--out", str(bne)],
                       check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
        info["train_wall_s"] = round(time.perf_counter() - t0, 1)
    else:
        info["reused"] = True
    report = bne / "training_report.json"
    if report.exists():
        data = json.loads(report.read_text())
        info.update({k: data[k] for k in ("train_s", "best_epoch", "epochs_run", "dev_accuracy") if k in data})
    return bne, info


# --- indexes -----------------------------------------------------------------------------------------------


def _artifact(kind: str) -> Path:
    from django.conf import settings

    return Path(settings.ARTIFACT_ROOT) / f"scale-{kind}"


def stage_index(cfg: Config) -> dict[str, Any]:
    from dataclasses import replace

    import numpy as np

    from linker.config import LinkerConfig
    from linker.encoders.registry import load_encoder
    from linker.index import DenseIndex
    from linker.linker import Linker
    from linker.retrieval import RetrievalConfig
    from webapp.linking.models import IndexVersion
    from webapp.training.services import concept_records

    version = _scale_version()
    bne, encoder_info = student_encoder(cfg)
    out: dict[str, Any] = {"encoder": encoder_info, "kinds": {}}
    t0 = time.perf_counter()
    records = concept_records(version)
    out["read_records_s"] = round(time.perf_counter() - t0, 1)
    encoder = load_encoder(bne / "encoder")
    phases: dict[str, float] = {}

    def progress(phase: str, done: int, total: int) -> None:
        if done == 0 and phase not in phases:
            phases[phase] = time.perf_counter()

    linker: Linker | None = None
    vectors: np.ndarray | None = None
    rows: np.ndarray | None = None
    exact: np.ndarray | None = None
    queries: np.ndarray | None = None
    names_sample: list[str] = []  # 3,000 of the names, for MiniLM's names/s
    for kind in cfg.kinds:
        config = LinkerConfig(retrieval=RetrievalConfig(sparse_search=False), index=index_config(kind, cfg.ivf_nlist))
        entry: dict[str, Any] = {"config": {k: v for k, v in vars(config.index).items()}}
        if linker is None:
            t0 = time.perf_counter()
            linker = Linker.build(records, encoder, config, metadata={"bench": "scale"}, progress=progress)
            total = time.perf_counter() - t0
            del records
            marks = sorted(phases.items(), key=lambda kv: kv[1]) + [("end", t0 + total)]
            spans = {name: round(marks[i + 1][1] - at, 1) for i, (name, at) in enumerate(marks[:-1])}
            out["names"], out["concepts"] = len(linker.table), len(linker.table.concepts)
            out["linker_build_s"] = round(total, 1)
            out["phases_s"] = spans  # tf-idf, encode, faiss (the first kind's)
            out["encode_names_per_s"] = round(len(linker.table) / spans["encode"]) if spans.get("encode") else None
            assert linker.index is not None
            # The index's own kept copy (float16 here, in faiss order beside its rows): the next kinds are built
            # from it and exact search runs over it, without a second float32 copy of millions of vectors.
            vectors, rows = linker.index._vectors, linker.index.rows.copy()
            entry["faiss_build_s"] = spans.get("faiss")
        else:
            assert vectors is not None and rows is not None
            t0 = time.perf_counter()
            index = DenseIndex.build(vectors, rows, config=config.index)
            entry["faiss_build_s"] = round(time.perf_counter() - t0, 1)
            linker = Linker(linker.table, linker.sparse, linker.encoder, index, replace(linker.config, index=config.index),
                            linker.metadata)
        if queries is None:
            queries, exact = _exact_neighbours(linker, vectors, cfg)
            out["recall_queries"] = len(queries)
        entry["recall_at_10_vs_exact"] = _recall(linker, queries, exact)
        entry["dev_accuracy"] = dev_accuracy(linker, cfg)
        folder = _artifact(kind)
        shutil.rmtree(folder, ignore_errors=True)
        t0 = time.perf_counter()
        linker.save(folder)
        entry["save_s"] = round(time.perf_counter() - t0, 1)
        entry["index_files_mb"] = folder_mb(folder / "index")
        entry["index_files"] = {p.name: round(p.stat().st_size / 1e6, 1) for p in sorted((folder / "index").iterdir())}
        entry["artifact_mb"] = folder_mb(folder)
        entry["load"] = _load_in_fresh_process(folder)
        IndexVersion.objects.filter(artifact_path=str(folder)).delete()
        IndexVersion.objects.create(dictionary=version.dictionary, dictionary_version=version, artifact_path=str(folder),
                                    state=IndexVersion.State.READY, name_count=len(linker.table),
                                    concept_count=len(linker.table.concepts), build_seconds=entry["faiss_build_s"] or 0)
        out["kinds"][kind] = entry
        if not names_sample:
            names_sample = random.Random(cfg.seed + 3).sample(list(linker.table.names), min(3000, len(linker.table)))
            out["distinct_names"] = len(set(linker.table.names))
    out["rss_after_builds_mb"] = current_rss_mb()
    if linker is not None:
        del linker, vectors
        out["control_medic_only"] = _medic_only_control(cfg, encoder)
    if names_sample:
        out["minilm"] = _minilm_projection(names_sample)
    return out


def _exact_neighbours(linker: Any, vectors: Any, cfg: Config) -> tuple[Any, Any]:
    """Query vectors of BC5CDR dev Disease mentions (distinct texts) and their exact top-10 name rows (brute force
    over the same vectors the index keeps, in blocks so that no [queries, 3M] matrix is held)."""
    import numpy as np

    from webapp.corpus.models import Mention

    texts = sorted(set(Mention.objects.filter(document__collection__slug=COLLECTION, mention_type="Disease")
                       .values_list("text", flat=True)))
    rng = random.Random(cfg.seed + 2)
    sample = rng.sample(texts, min(cfg.recall_queries, len(texts)))
    queries = [linker.queries_for([t])[0][0] for t in sample]
    q = np.asarray(linker.encoder.encode(queries), dtype=np.float32)
    k = 10
    best_scores = np.full((len(q), k), -np.inf, dtype=np.float32)
    best_ids = np.full((len(q), k), -1, dtype=np.int64)
    for start in range(0, len(vectors), 200_000):
        block = vectors[start : start + 200_000].astype(np.float32) @ q.T  # [b, queries]
        top = np.argpartition(-block, k - 1, axis=0)[:k].T  # [queries, k]
        scores = np.take_along_axis(block.T, top, axis=1)
        merged_scores = np.concatenate([best_scores, scores], axis=1)
        merged_ids = np.concatenate([best_ids, top + start], axis=1)
        order = np.argsort(-merged_scores, axis=1, kind="stable")[:, :k]
        best_scores = np.take_along_axis(merged_scores, order, axis=1)
        best_ids = np.take_along_axis(merged_ids, order, axis=1)
    rows = linker.index.rows[best_ids]
    return q, rows


def _recall(linker: Any, queries: Any, exact: Any) -> float:
    _, found = linker.index.search(queries, 10)
    hits = sum(len(set(f.tolist()) & set(e.tolist())) for f, e in zip(found, exact, strict=True))
    return round(hits / exact.size, 4)


_LOAD_PROBE = """
import json, sys, time
from pathlib import Path
def rss():
    fields = dict(l.split(':', 1) for l in Path('/proc/self/status').read_text().splitlines() if ':' in l)
    return {k: round(int(fields[k].split()[0]) / 1024, 1) for k in ('VmRSS', 'VmHWM')}
from linker.linker import Linker
before = rss()
t0 = time.perf_counter()
linker = Linker.load(sys.argv[1])
seconds = time.perf_counter() - t0
after = rss()
print(json.dumps({'load_s': round(seconds, 1), 'rss_before_mb': before['VmRSS'], 'rss_after_mb': after['VmRSS'],
                  'rss_peak_mb': after['VmHWM'], 'linker_rss_mb': round(after['VmRSS'] - before['VmRSS'], 1)}))
"""


def _load_in_fresh_process(folder: Path) -> dict[str, Any]:
    """RSS of a fresh Python process before and after ``Linker.load`` (the web process pays the same once)."""
    done = subprocess.run([sys.executable, "-c", _LOAD_PROBE, str(folder)], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def dev_accuracy(linker: Any, cfg: Config) -> dict[str, Any]:
    """Acc@1 / Acc@5 of the linker on every BC5CDR dev Disease mention (the linker's own protocol, gold ids resolved
    through the table's alternative ids), beside the panel's sample."""
    from linker.data import iter_pubtator
    from linker.evaluate import evaluate_linking
    from linker.protocol import build_eval_set

    docs = list(iter_pubtator(cfg.data / DEV))
    eval_set = build_eval_set(docs, linker.table, linker.preprocessor, {"Disease"})
    t0 = time.perf_counter()
    ranked = linker.link_queries([m.queries for m in eval_set], 20)
    seconds = time.perf_counter() - t0
    metrics = evaluate_linking([m.gold_parts for m in eval_set],
                               [[[c.concept_id for c in part] for part in parts] for parts in ranked])
    return {"acc@1": round(float(metrics["acc@1"]), 4), "acc@5": round(float(metrics["acc@5"]), 4),
            "mentions": len(eval_set), "mentions_per_s": round(len(eval_set) / seconds, 1)}


def _medic_only_control(cfg: Config, encoder: Any) -> dict[str, Any]:
    """The same encoder and retrieval over CTD MEDIC alone (exact search): what the synthetic names cost."""
    from linker.config import LinkerConfig
    from linker.dictionary_formats import iter_medic_tsv
    from linker.index_kinds import IndexConfig
    from linker.linker import Linker
    from linker.retrieval import RetrievalConfig

    config = LinkerConfig(retrieval=RetrievalConfig(sparse_search=False), index=IndexConfig(kind="flat"))
    linker = Linker.build(iter_medic_tsv(cfg.data / MEDIC), encoder, config)
    return {"names": len(linker.table), **dev_accuracy(linker, cfg)}


def _minilm_projection(sample: Sequence[str]) -> dict[str, Any]:
    """MiniLM (zero-shot, the CPU default) on 3,000 of the names: names/s (the projection is made by the caller)."""
    from linker.encoders.transformer import TransformerEncoder

    encoder = TransformerEncoder()
    encoder.encode(sample[:64])  # warm-up
    t0 = time.perf_counter()
    encoder.encode(sample, batch_size=512)
    rate = len(sample) / (time.perf_counter() - t0)
    return {"sample": len(sample), "names_per_s": round(rate, 1)}


# --- the panel ---------------------------------------------------------------------------------------------


def stage_panel(cfg: Config) -> dict[str, Any]:
    from webapp.linking.models import IndexVersion
    from webapp.linking.registry import forget_all
    from webapp.training.services import activate_index

    _scale_version()
    out: dict[str, Any] = {}
    for kind in cfg.kinds:
        index = IndexVersion.objects.filter(artifact_path=str(_artifact(kind))).first()
        if index is None:
            out[kind] = {"error": "no index of this kind built: run the index stage first"}
            continue
        forget_all()  # the previous kind's linker is dropped before this one loads
        activate_index(index.pk)
        out[kind] = bench_panel(cfg, SLUG, COLLECTION)
    forget_all()
    return out


def bench_panel(cfg: Config, slug: str, collection: str) -> dict[str, Any]:
    """bench/curation.py's panel benchmark on a given dictionary and collection, with the RSS of loading its index
    and the accuracy of the suggestions it stored (top 10 per mention) against the gold links."""
    from django.conf import settings

    from linker.device import limit_threads
    from webapp.corpus.models import Mention
    from webapp.linking.registry import get_active_linker

    curation = importlib.import_module("bench.curation")
    # Timed as the web process serves it (webapp/wsgi.py), as bench/curation.py does; the builds before kept every core.
    limit_threads(settings.LINKER_WEB_THREADS)
    client = _curator_client()
    rng = random.Random(cfg.seed)
    mentions = list(Mention.objects.filter(document__collection__slug=collection, mention_type="Disease")
                    .order_by("pk").values_list("pk", flat=True))
    sample = rng.sample(mentions, min(cfg.mentions, len(mentions)))
    rss_before = current_rss_mb()
    t0 = time.perf_counter()
    active = get_active_linker(slug)  # loading the index once per process is not the panel's cost
    load_s = time.perf_counter() - t0
    rss_after = current_rss_mb()
    curation._timed(client, f"/curate/mentions/{sample[0]}/panel/")  # warm the templates
    _forget_suggestions(sample[1:])  # a first view stores its suggestions, also when an earlier run stored them
    first = [curation._timed(client, f"/curate/mentions/{pk}/panel/") for pk in sample[1:]]
    again = [curation._timed(client, f"/curate/mentions/{pk}/panel/") for pk in sample[1:]]
    return {"index_load_s": round(load_s, 2), "rss_before_load_mb": rss_before, "rss_after_load_mb": rss_after,
            "ranked_by": active.linker.ranked_by if active is not None else "none",
            "first_view": curation.summary(first), "repeat_view": curation.summary(again),
            "accuracy": suggestion_accuracy(sample[1:], active.label if active is not None else "")}


def _forget_suggestions(mention_pks: Sequence[int]) -> None:
    """The stored model suggestions of these mentions removed, their status back to not reviewed (as imported)."""
    from webapp.corpus.models import Link, Mention

    Link.objects.filter(mention_id__in=mention_pks, origin=Link.Origin.MODEL).delete()
    Mention.objects.filter(pk__in=mention_pks, status=Mention.Status.SUGGESTED).update(status=Mention.Status.PENDING)


def suggestion_accuracy(mention_pks: Sequence[int], label: str) -> dict[str, Any]:
    """Acc@1 / Acc@5 of the stored suggestions of ``label`` against the gold concept, over the mentions with one
    part whose gold link resolved to a concept of the dictionary (composites and unresolved gold left out)."""
    from webapp.corpus.models import Link

    gold: dict[int, list[int | None]] = {}
    for mention, part, concept in Link.objects.filter(mention__in=mention_pks, origin=Link.Origin.GOLD).values_list(
            "mention", "part", "concept"):
        gold.setdefault(mention, []).append(concept if part == 0 else None)
    suggested: dict[int, list[int | None]] = {}
    for mention, concept in (Link.objects.filter(mention__in=mention_pks, origin=Link.Origin.MODEL, part=0,
                                                 model_version=label).order_by("mention", "rank")
                             .values_list("mention", "concept")):
        suggested.setdefault(mention, []).append(concept)
    scored = [pk for pk, g in gold.items() if len(g) == 1 and g[0] is not None]
    at1 = sum(1 for pk in scored if suggested.get(pk, [])[:1] == gold[pk])
    at5 = sum(1 for pk in scored if gold[pk][0] in suggested.get(pk, [])[:5])
    return {"mentions_scored": len(scored), "left_out": len(mention_pks) - len(scored),
            "acc@1": round(at1 / len(scored), 4) if scored else None,
            "acc@5": round(at5 / len(scored), 4) if scored else None}


def stage_medic(cfg: Config) -> dict[str, Any]:
    """The real MEDIC dictionary alone, MiniLM zero-shot dense + tf-idf (flat), as ``build_index --activate`` makes it;
    its collection is imported after the activation, so no re-linking of it is queued (bench/curation.py's order)."""
    from django.core.management import call_command

    from webapp.corpus.models import Collection
    from webapp.linking.models import IndexVersion
    from webapp.linking.registry import forget_all
    from webapp.vocab.models import Dictionary

    out: dict[str, Any] = {}
    if not Dictionary.objects.filter(slug="medic").exists():
        t0 = time.perf_counter()
        call_command("import_dictionary", str(cfg.data / MEDIC), "--slug", "medic", verbosity=0)
        out["import_s"] = round(time.perf_counter() - t0, 1)
    index = IndexVersion.objects.filter(dictionary__slug="medic", state=IndexVersion.State.ACTIVE).first()
    if index is None:
        t0 = time.perf_counter()
        call_command("build_index", "--dictionary", "medic", "--activate", verbosity=0)
        out["build_index_s"] = round(time.perf_counter() - t0, 1)
        index = IndexVersion.objects.get(dictionary__slug="medic", state=IndexVersion.State.ACTIVE)
    out["names"] = index.name_count
    if not Collection.objects.filter(slug=MEDIC_COLLECTION).exists():
        call_command("import_documents", str(cfg.data / DEV), "--collection", MEDIC_COLLECTION, "--dictionary", "medic",
                     verbosity=0)
    out["gold"] = gold_resolution(MEDIC_COLLECTION)
    forget_all()
    out["panel"] = bench_panel(cfg, "medic", MEDIC_COLLECTION)
    forget_all()
    return out


# --- verdict and RESULTS.md ---------------------------------------------------------------------------------


def verdict(result: dict[str, Any]) -> dict[str, Any]:
    """Each goal met or missed, with the figure it was judged on (absent stages: not measured)."""
    out: dict[str, Any] = {}
    search = result.get("search")
    if search:
        p95 = search["all"]["p95_ms"]
        out["search_p95_ms"] = {"value": p95, "goal": GOALS["search_p95_ms"], "met": p95 < GOALS["search_p95_ms"]}
    for kind, panel in (result.get("panel") or {}).items():
        if "first_view" in panel:
            p95 = panel["first_view"]["p95_ms"]
            out[f"panel_p95_ms_{kind}"] = {"value": p95, "goal": GOALS["panel_p95_ms"], "met": p95 < GOALS["panel_p95_ms"]}
    for kind, entry in ((result.get("index") or {}).get("kinds") or {}).items():
        # The index (faiss structure, kept float copy, row map) is loaded whole, so its files are its memory; the
        # served linker adds the name table, the tf-idf matrix and the encoder: both are judged, each by name.
        gb = entry["index_files_mb"] / 1000
        out[f"index_memory_gb_{kind}"] = {"value": round(gb, 2), "goal": GOALS["index_memory_gb"],
                                          "met": gb < GOALS["index_memory_gb"], "what": "the index's files, loaded whole"}
        mb = (entry.get("load") or {}).get("linker_rss_mb")
        if mb is not None:
            out[f"linker_memory_gb_{kind}"] = {"value": round(mb / 1024, 2), "goal": GOALS["index_memory_gb"],
                                               "met": mb / 1024 < GOALS["index_memory_gb"],
                                               "what": "RSS a fresh process gains loading the whole linker artifact"}
    medic = (result.get("medic") or {}).get("panel")
    if medic:
        p95 = medic["first_view"]["p95_ms"]
        out["medic_panel_p95_ms"] = {"value": p95, "goal": GOALS["medic_panel_p95_ms"], "met": p95 < GOALS["medic_panel_p95_ms"]}
    return out


def _met(v: dict[str, Any]) -> str:
    return "met" if v["met"] else "**missed**"


def append_results(result: dict[str, Any], cfg: Config) -> None:
    g = result.get("generate")
    title = f"{g['names']:,} names imported, indexed and served" if g else "the MEDIC-size dense panel"
    lines = [
        "",
        f"## {result['date'][:16].replace('T', ' ')} UTC scale: {title} (bench/scale.py)",
        "",
        f"Machine: {result.get('machine', 'not described (generate only)')}; 1-minute load average "
        f"{result['load_avg_1m_at_start']} at the start, {result['load_avg_1m_at_end']} at the end; "
        f"peak RSS of the bench process {result['rss_peak_mb']:,} MB. Stages: {', '.join(result['stages'])}.",
    ]
    if cfg.note:
        lines.append(f"Note: {cfg.note}")
    lines += [] if g is None else [
        "",
        f"Generated release ({'reused; ' if g.get('reused') else ''}written in {g.get('generate_s')} s, seed "
        f"{result['seed']}): {g['concepts']:,} concepts ({g['medic_concepts']:,} real CTD MEDIC, "
        f"{g['synthetic_concepts']:,} synthetic), {g['names']:,} names ({g['names_per_concept_mean']} a concept, at most "
        f"{g['names_per_concept_max']}; {g['name_chars_mean']} characters on average), {g['mrconso_rows']:,} MRCONSO rows, "
        f"{g['mrrel_rows']:,} PAR edges, {g['mrsty_rows']:,} semantic types; {g['mb_total']} MB on disk "
        f"({', '.join(f'{k} {v / 1e6:.1f} MB' for k, v in g['bytes'].items())}).",
    ]
    imp = result.get("import")
    if imp:
        lines += ["", "| import | value |", "|---|---:|"]
        if "import_s" in imp:
            lines += [f"| import_dictionary (s) | {imp['import_s']} |", f"| names/s | {imp['names_per_s']:,} |",
                      f"| peak RSS before / after (MB) | {imp['rss_peak_before_mb']:,} / {imp['rss_peak_after_mb']:,} |"]
        lines += [f"| concepts / names imported | {imp['concepts']:,} / {imp['names']:,} |"]
        for table, s in imp["postgres"].items():
            lines.append(f"| {table}: table + indexes = total (MB) | {s['table_mb']:,} + {s['indexes_mb']:,} = {s['total_mb']:,} |")
        lines.append(f"| BC5CDR dev Disease gold links resolved | {imp['gold']['resolved']:,} / {imp['gold']['disease_gold_links']:,} |")
    search = result.get("search")
    if search:
        lines += ["", "| concept search | n | p50 ms | p95 ms | max ms | goal |", "|---|---:|---:|---:|---:|---|"]
        for kind, f in search["by_kind"].items():
            lines.append(f"| {kind} | {f['n']} | {f['p50_ms']} | {f['p95_ms']} | {f['max_ms']} | |")
        a = search["all"]
        lines.append(f"| all | {a['n']} | {a['p50_ms']} | {a['p95_ms']} | {a['max_ms']} | p95 < 100 |")
    index = result.get("index")
    if index:
        e = index["encoder"]
        lines += ["", f"Index: {index['names']:,} names of {index['concepts']:,} concepts; encoder BNE (fast sizes, 16 "
                      f"negatives, trained here on BC5CDR train + CTD MEDIC{', reused' if e.get('reused') else ''}; "
                      f"training {round(e.get('train_s') or e.get('train_wall_s') or 0)} s, best epoch "
                      f"{e.get('best_epoch')}), encoding {index.get('encode_names_per_s') or 0:,} "
                      f"names/s; linker build {index['linker_build_s']} s (phases: "
                      f"{', '.join(f'{k} {v} s' for k, v in index['phases_s'].items())}); tf-idf scores only the dense "
                      "candidates (sparse_search=False).", "",
                  "| index kind | faiss build s | index files MB | whole artifact MB | fresh process RSS after load MB "
                  "(linker's share) | load s | recall@10 vs exact | BC5CDR dev Disease Acc@1 / Acc@5 (linker) |",
                  "|---|---:|---:|---:|---:|---:|---:|---|"]
        for kind, k in index["kinds"].items():
            load, acc = k.get("load", {}), k["dev_accuracy"]
            lines.append(f"| {kind} ({_describe_config(k['config'])}) | {k['faiss_build_s']} | {k['index_files_mb']:,} | "
                         f"{k['artifact_mb']:,} | {load.get('rss_after_mb', '?'):,} ({load.get('linker_rss_mb', '?'):,}) | "
                         f"{load.get('load_s', '?')} | {k['recall_at_10_vs_exact']} ({index['recall_queries']} queries) | "
                         f"{acc['acc@1']} / {acc['acc@5']} ({acc['mentions']:,}) |")
        c = index.get("control_medic_only")
        if c:
            lines += ["", f"Control: the same encoder and retrieval over CTD MEDIC alone ({c['names']:,} names, exact "
                          f"search): Acc@1 {c['acc@1']} / Acc@5 {c['acc@5']} on the same mentions; the difference is what "
                          "the synthetic names (each a real name with a word or two swapped) take away."]
        m = index.get("minilm")
        if m:
            hours = index["distinct_names"] / m["names_per_s"] / 3600
            lines += ["", f"MiniLM (zero-shot, CPU) on {m['sample']:,} of these names: {m['names_per_s']} names/s, so "
                          f"the {index['distinct_names']:,} distinct names would take {hours:.1f} h to encode here; "
                          "shared/docs/GPU.md is the recipe for the lent H100 (measured there: BC5CDR BioSyn "
                          "pre-training 70 s + 10 epochs 142 s + index 59 s, the index encoded by build-index on the "
                          "machine's 16 CPU cores)."]
    panel = result.get("panel")
    medic = result.get("medic")
    if panel or medic:
        lines += ["", "| candidate panel | n | first view p50 / p95 ms | repeat view p50 / p95 ms | index load s | "
                      "Acc@1 / Acc@5 (mentions) | goal |", "|---|---:|---:|---:|---:|---|---|"]
        rows = [(f"{SLUG}, {kind}", p, "p95 < 250") for kind, p in (panel or {}).items()]
        if medic:
            rows.append((f"MEDIC alone ({medic['names']:,} names), MiniLM + tf-idf, flat", medic["panel"], "p95 < 100"))
        for label, p, goal in rows:
            if "first_view" not in p:
                lines.append(f"| {label} | {p.get('error')} | | | | | {goal} |")
                continue
            f, r, acc = p["first_view"], p["repeat_view"], p["accuracy"]
            lines.append(f"| {label} | {f['n']} | {f['p50_ms']} / {f['p95_ms']} | {r['p50_ms']} / {r['p95_ms']} | "
                         f"{p['index_load_s']} | {acc['acc@1']} / {acc['acc@5']} ({acc['mentions_scored']}) | {goal} |")
    if medic and "build_index_s" in medic:
        lines += ["", f"MEDIC alone: `build_index --dictionary medic --activate` (MiniLM zero-shot, on this CPU) took "
                      f"{medic['build_index_s']} s; BC5CDR dev Disease gold links resolved: {medic['gold']['resolved']:,} / "
                      f"{medic['gold']['disease_gold_links']:,}."]
    if result["verdict"]:
        lines += ["", "Goals: " + "; ".join(f"{k} {v['value']} (goal {v['goal']}): {_met(v)}"
                                            for k, v in result["verdict"].items()) + "."]
    with open(RESULTS, "a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def _describe_config(config: dict[str, Any]) -> str:
    keys = ("hnsw_storage", "ivf_nprobe", "pq_m", "pq_bits", "vector_dtype")
    kind = config.get("kind")
    shown = [f"{k} {config[k]}" for k in keys if k in config and (kind == "ivfpq" or not k.startswith(("ivf", "pq")))
             and (kind == "hnsw" or k != "hnsw_storage")]
    return ", ".join(shown)


def parse_args(argv: list[str] | None = None) -> Config:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--names", type=int, default=Config.names, help="Distinct names of the generated release.")
    parser.add_argument("--seed", type=int, default=Config.seed)
    parser.add_argument("--stages", default=",".join(STAGES), help=f"Comma-separated of {', '.join(STAGES)}.")
    parser.add_argument("--kinds", default=",".join(Config.kinds), help="ANN index kinds: hnsw (sq8), ivfpq, hnsw-flat, flat.")
    parser.add_argument("--mentions", type=int, default=Config.mentions, help="Mentions whose panel is timed.")
    parser.add_argument("--searches", type=int, default=Config.searches, help="Concept search queries.")
    parser.add_argument("--recall-queries", type=int, default=Config.recall_queries)
    parser.add_argument("--data", type=Path, default=Config.data, help="The shared data folder.")
    parser.add_argument("--keep-db", metavar="NAME", help="Use (and keep) this database instead of a throwaway one.")
    parser.add_argument("--bne-minutes", type=float, default=Config.bne_minutes, help="BNE's training time budget.")
    parser.add_argument("--ivf-nlist", type=int, default=0, help="ivfpq's lists (0: the index's own choice, 4 sqrt(n)).")
    parser.add_argument("--note", default="", help="A line recorded with the figures.")
    parser.add_argument("--no-record", action="store_true", help="Print only; do not append to bench/RESULTS.md.")
    args = parser.parse_args(argv)
    stages = tuple(s for s in args.stages.split(",") if s)
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        parser.error(f"unknown stage(s) {', '.join(unknown)}; expected {', '.join(STAGES)}")
    if args.names < 1 or args.mentions < 2 or args.searches < 1:
        parser.error("--names must be at least 1, --mentions at least 2 and --searches at least 1")
    return Config(names=args.names, seed=args.seed, stages=stages, kinds=tuple(k for k in args.kinds.split(",") if k),
                  mentions=args.mentions, searches=args.searches, recall_queries=args.recall_queries, data=args.data,
                  keep_db=args.keep_db, record=not args.no_record, bne_minutes=args.bne_minutes,
                  ivf_nlist=args.ivf_nlist, note=args.note)


if __name__ == "__main__":
    print(json.dumps(main(parse_args()), default=str), flush=True)
