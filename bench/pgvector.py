"""faiss (flat, HNSW, IVF-PQ) beside pgvector's HNSW at one dictionary size, on the same vectors and queries.

    python bench/pgvector.py [--names 100000] [--queries 200] [--kinds flat,hnsw,ivfpq,pgvector] [--dsn URL]

The names are bench/scale.py's generator's (real MEDIC/HPO/DOID names with words swapped); the queries are other
generated names, so that none is a name of the index. The vectors are 384-d and normalised like MiniLM's but come
from hashed character trigrams under a fixed random projection (a transformer encodes a few hundred names a second
on this machine: a million would take hours): near-identical names are near, as with a real encoder, so recall
figures are indicative, not those of the served model. Each kind reports its build time, its size, the
query-at-a-time search p50/p95 of 64 names (the panel's names_per_source), recall@10 against exact search, and what
a fresh process holding only that index pays: resident memory after load and the time until its first answer.

Without ``--dsn`` the embedded PostgreSQL (pgserver, which ships pgvector) is started in var/bench-pgvector/.
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from linker.index import DenseIndex  # noqa: E402 (after the path is set)
from linker.index_kinds import IndexConfig  # noqa: E402

WORK = ROOT / "var" / "bench-pgvector"
DIM, BUCKETS, K, RECALL_AT = 384, 1 << 16, 64, 10


def names(total: int, queries: int, seed: int, data: Path) -> tuple[list[str], list[str]]:
    """``total`` distinct generated names and ``queries`` more, none of them among the first."""
    from scale import load_sources, recombine

    sources = load_sources(data)
    rng = random.Random(seed)
    seen: dict[str, None] = {}
    while len(seen) < total + queries:
        for name in recombine(rng.choice(sources.templates), rng, sources.words):
            seen.setdefault(name.lower(), None)
    every = list(seen)[: total + queries]
    rng.shuffle(every)
    return every[queries:], every[:queries]


def encode(texts: list[str], seed: int = 0) -> np.ndarray:
    """Hashed character trigrams of each text (with word edges), through a fixed random projection, normalised."""
    projection = np.random.default_rng(seed).standard_normal((BUCKETS, DIM)).astype(np.float32)
    out = np.empty((len(texts), DIM), dtype=np.float32)
    for i, text in enumerate(texts):
        padded = f" {text} "
        grams = [zlib.crc32(padded[j:j + 3].encode()) % BUCKETS for j in range(len(padded) - 2)]
        out[i] = projection[grams].sum(axis=0)
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


def timed_searches(index: Any, queries: np.ndarray) -> tuple[dict[str, float], np.ndarray]:
    """One query at a time, as a panel asks: p50/p95 in ms and every query's top-k rows."""
    rows = np.full((len(queries), K), -1, dtype=np.int64)
    times = []
    for i in range(len(queries)):
        t0 = time.perf_counter()
        rows[i] = index.search(queries[i : i + 1], K)[1][0]
        times.append((time.perf_counter() - t0) * 1000)
    return {"search_p50_ms": round(float(np.percentile(times, 50)), 2),
            "search_p95_ms": round(float(np.percentile(times, 95)), 2)}, rows


def recall(found: np.ndarray, exact: np.ndarray) -> float:
    hits = [len(set(f[:RECALL_AT].tolist()) & set(e[:RECALL_AT].tolist())) for f, e in zip(found, exact, strict=True)]
    return round(sum(hits) / (RECALL_AT * len(exact)), 4)


_PROBE = """
import json, sys, time
from pathlib import Path
def rss():
    fields = dict(l.split(':', 1) for l in Path('/proc/self/status').read_text().splitlines() if ':' in l)
    return round(int(fields['VmRSS'].split()[0]) / 1024, 1)
import numpy as np
from linker.pgvector_index import load_index, use_database
import psycopg
if sys.argv[2]:
    use_database(lambda: psycopg.connect(sys.argv[2]))
query = np.load(sys.argv[3])
before = rss()
t0 = time.perf_counter()
index = load_index(sys.argv[1])
loaded = time.perf_counter() - t0
index.search(query, 64)
ready = time.perf_counter() - t0
print(json.dumps({'load_s': round(loaded, 2), 'ready_s': round(ready, 2), 'index_rss_mb': round(rss() - before, 1)}))
"""


def fresh_process(folder: Path, dsn: str, query: Path) -> dict[str, Any]:
    """What a new process pays to hold the index saved in ``folder`` and answer one query with it."""
    done = subprocess.run([sys.executable, "-c", _PROBE, str(folder), dsn, str(query)], cwd=ROOT,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def configs(kind: str, args: argparse.Namespace) -> IndexConfig:
    common = {"hnsw_m": args.m, "hnsw_ef_construction": args.ef_construction, "hnsw_ef_search": args.ef_search}
    if kind == "pgvector":
        return IndexConfig(kind="pgvector", vector_dtype=args.pg_dtype, **common)
    return IndexConfig(kind=kind, vector_dtype="float16" if kind != "flat" else "float32", **common)  # type: ignore[arg-type]


def embedded_dsn() -> str:
    os.environ["EMBEDDED_DATA_DIR"] = str(WORK)
    from webapp.embedded import postgres_url

    return postgres_url()


def measure(kind: str, args: argparse.Namespace, vectors: np.ndarray, queries: np.ndarray, exact: np.ndarray,
            dsn: str) -> dict[str, Any]:
    from linker.pgvector_index import PgVectorIndex, build_index

    folder = WORK / f"index-{kind}"
    shutil.rmtree(folder, ignore_errors=True)
    t0 = time.perf_counter()
    index = build_index(vectors, configs(kind, args))
    out: dict[str, Any] = {"build_s": round(time.perf_counter() - t0, 1)}
    index.save(folder)
    if isinstance(index, PgVectorIndex):
        out["table_and_index_mb"] = round(index.table_bytes() / 2**20, 1)
        out["folder_mb"] = round(sum(f.stat().st_size for f in folder.iterdir()) / 2**20, 1)
        sweep = {}
        for ef in args.ef_sweep:
            index.config = replace(index.config, hnsw_ef_search=ef)
            timed, found = timed_searches(index, queries)
            sweep[ef] = {**timed, "recall_at_10": recall(found, exact)}
        out["ef_search"] = sweep
        index.config = configs(kind, args).resolved(len(vectors))
    else:
        out["folder_mb"] = round(sum(f.stat().st_size for f in folder.iterdir()) / 2**20, 1)
    timed, found = timed_searches(index, queries)
    out.update(timed, recall_at_10=recall(found, exact))
    np.save(WORK / "query.npy", queries[:1])
    out["fresh_process"] = fresh_process(folder, dsn if kind == "pgvector" else "", WORK / "query.npy")
    if isinstance(index, PgVectorIndex):
        out["pg_table"] = index.table
        index.close()
        if not args.keep_table:
            from linker.pgvector_index import drop_table

            drop_table(folder)
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--names", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--kinds", default="flat,hnsw,ivfpq,pgvector")
    parser.add_argument("--dsn", default="", help="A PostgreSQL with pgvector (default: the embedded one).")
    parser.add_argument("--m", type=int, default=16, help="HNSW neighbours per node (faiss and pgvector).")
    parser.add_argument("--ef-construction", type=int, default=64)
    parser.add_argument("--ef-search", type=int, default=100)
    parser.add_argument("--ef-sweep", default="64,100,200", help="pgvector ef_search values measured as well.")
    parser.add_argument("--pg-dtype", default="float16", choices=("float16", "float32"), help="halfvec or vector.")
    parser.add_argument("--keep-table", action="store_true")
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("SHARED_DATA", ROOT.parent / "shared" / "data")))
    args = parser.parse_args(argv)
    args.ef_sweep = [int(x) for x in args.ef_sweep.split(",") if x]
    WORK.mkdir(parents=True, exist_ok=True)
    import psycopg

    from linker.pgvector_index import use_database

    dsn = args.dsn or embedded_dsn()
    use_database(lambda: psycopg.connect(dsn))
    result: dict[str, Any] = {"names": args.names, "queries": args.queries, "dim": DIM, "k": K,
                              "hnsw": {"m": args.m, "ef_construction": args.ef_construction, "ef_search": args.ef_search},
                              "pg_dtype": args.pg_dtype, "cores": os.cpu_count(), "load_1m": os.getloadavg()[0]}
    t0 = time.perf_counter()
    texts, query_texts = names(args.names, args.queries, args.seed, args.data)
    vectors, queries = encode(texts), encode(query_texts)
    result["encode_s"] = round(time.perf_counter() - t0, 1)
    exact = DenseIndex.build(vectors, config=IndexConfig(kind="flat")).search(queries, K)[1]
    result["kinds"] = {}
    for kind in [k for k in args.kinds.split(",") if k]:
        result["kinds"][kind] = measure(kind, args, vectors, queries, exact, dsn)
        print(json.dumps({kind: result["kinds"][kind]}), file=sys.stderr, flush=True)
    result["load_1m_end"] = os.getloadavg()[0]
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
