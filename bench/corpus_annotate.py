"""bench/corpus.py's annotate stage: corpus runs over the same documents with 1, 2, 4 ... Celery worker processes.

For each worker count W: a collection of its own holding a copy of the first N imported documents (a clean state
without deleting anything), W workers started (``celery -A webapp worker --concurrency 1`` each, W separate
processes, on the bench's private queue, each computing on ``WORKER_THREADS`` threads: ``--threads``, 1 by default; 0
the cores divided by W, at least 1), a warm-up run of W one-document chunks so that each worker has loaded its
index and tagger (timed apart: a long run pays it once), then the timed corpus run (webapp.curation.corpus_runs
``start_run``, as ``manage.py corpus_run`` starts it) from its start until its parent job ends. Sampled meanwhile
(psutil, every 0.5 s): each worker's RSS (its main process and pool child together) and CPU, and the CPU of the
PostgreSQL server's processes (those serving the bench database apart). Before and after: pg_stat_database of
the bench database, and the server-wide pg_stat_bgwriter and pg_stat_wal (other databases on the server show there).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench.corpus_db import ROOT, child_env, copy_documents, make_collection, say, sizes

DB_STATS = ("xact_commit", "xact_rollback", "blks_read", "blks_hit", "tup_inserted", "tup_updated", "tup_deleted",
            "tup_fetched", "temp_bytes")


class Sampler:
    """Peak RSS and CPU seconds of each worker's process tree, and the PostgreSQL processes' CPU seconds."""

    def __init__(self, workers: list[subprocess.Popen[bytes]], database: str, every: float = 0.5) -> None:
        self.workers = workers
        self.database = database
        self.every = every
        self.peak_mb = [0.0] * len(workers)
        self.peak_process_mb = 0.0
        self.cpu_s = [0.0] * len(workers)
        self.pg: dict[int, list[Any]] = {}  # pid -> [first cpu s (0 when it started later), last cpu s, ours]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._first = True

    def __enter__(self) -> Sampler:
        self._sample()
        self._first = False
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self._sample()

    def _sample(self) -> None:
        import psutil

        for i, worker in enumerate(self.workers):
            with contextlib.suppress(psutil.Error):
                root = psutil.Process(worker.pid)
                tree = [root, *root.children(recursive=True)]
                rss = [p.memory_info().rss / 2**20 for p in tree]
                self.peak_mb[i] = max(self.peak_mb[i], sum(rss))
                self.peak_process_mb = max(self.peak_process_mb, *rss)
                self.cpu_s[i] = sum(sum(p.cpu_times()[:2]) for p in tree)
        for p in psutil.process_iter(["name", "cmdline"]):
            if p.info["name"] not in ("postgres", "postmaster"):
                continue
            with contextlib.suppress(psutil.Error):
                cpu = sum(p.cpu_times()[:2])
                seen = self.pg.setdefault(p.pid, [cpu if self._first else 0.0, cpu,
                                                  f" {self.database} " in " ".join(p.info["cmdline"] or []) + " "])
                seen[1] = cpu

    def postgres_cpu_s(self) -> dict[str, float]:
        ours = sum(last - first for first, last, mine in self.pg.values() if mine)
        every = sum(last - first for first, last, _ in self.pg.values())
        return {"bench_database_backends": round(ours, 1), "whole_server": round(every, 1)}


def pg_snapshot() -> dict[str, Any]:
    from django.db import connection

    out: dict[str, Any] = {}
    with connection.cursor() as cur:
        cur.execute(f"SELECT {', '.join(DB_STATS)} FROM pg_stat_database WHERE datname = current_database()")
        out["database"] = dict(zip(DB_STATS, cur.fetchone(), strict=True))
        cur.execute("SELECT buffers_checkpoint, buffers_clean, buffers_backend FROM pg_stat_bgwriter")
        out["bgwriter"] = dict(zip(("buffers_checkpoint", "buffers_clean", "buffers_backend"), cur.fetchone(), strict=True))
        with contextlib.suppress(Exception):
            cur.execute("SELECT wal_records, wal_bytes::bigint FROM pg_stat_wal")
            out["wal"] = dict(zip(("wal_records", "wal_bytes"), cur.fetchone(), strict=True))
        cur.execute("SELECT count(*) FROM pg_extension WHERE extname = 'pg_stat_statements'")
        out["pg_stat_statements"] = bool(cur.fetchone()[0])
    return out


def pg_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for group in ("database", "bgwriter", "wal"):
        if group in before and group in after:
            out[group] = {k: int(after[group][k]) - int(before[group][k]) for k in before[group]}
    if not after.get("pg_stat_statements"):
        out["pg_stat_statements"] = "not installed on this server"
    return out


def start_workers(count: int, queue: str, database: str, log_dir: Path, threads: int) -> list[subprocess.Popen[bytes]]:
    from webapp.celery import app

    env = {**child_env(database), "WORKER_THREADS": str(threads)}
    workers = []
    for i in range(count):
        log = open(log_dir / f"worker-{count}-{i}.log", "wb")  # noqa: SIM115 - closed with the process
        workers.append(subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "webapp", "worker", "-Q", queue, "--concurrency", "1",
             "-n", f"{queue}-{i}@%h", "--loglevel", "WARNING"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
    names = [f"{queue}-{i}@{os.uname().nodename}" for i in range(count)]
    deadline = time.monotonic() + 180
    while len(app.control.ping(destination=names, timeout=1.0)) < count:
        if any(w.poll() is not None for w in workers) or time.monotonic() > deadline:
            stop_workers(workers)
            raise RuntimeError(f"the Celery workers did not start: see {log_dir}")
        time.sleep(0.5)
    return workers


def stop_workers(workers: list[subprocess.Popen[bytes]]) -> None:
    for w in workers:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(w.pid, 15)
    for w in workers:
        try:
            w.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(w.pid, 9)
            w.wait()


def run_and_wait(collection: Any, chunk_size: int, timeout_s: float) -> tuple[Any, float]:
    """A corpus run over the whole collection on the workers, until its parent job ends: (the job, seconds)."""
    from webapp.curation.corpus_runs.jobs import start_run
    from webapp.curation.corpus_runs.scope import RunScope
    from webapp.jobs.models import Job

    t0 = time.perf_counter()
    run = start_run(collection, RunScope(), chunk_size=chunk_size)
    deadline = time.monotonic() + timeout_s
    while not Job.objects.get(pk=run.pk).is_finished:
        if time.monotonic() > deadline:
            raise RuntimeError(f"corpus run {run.pk} not done after {timeout_s:.0f} s")
        time.sleep(0.25)
    seconds = time.perf_counter() - t0
    run.refresh_from_db()
    if run.state != Job.State.SUCCEEDED:
        raise RuntimeError(f"corpus run {run.pk} ended {run.state}: {run.error}")
    return run, seconds


def chunk_profile(run: Any) -> dict[str, Any]:
    """The chunks' summed counts, their time in the task, and their ``result["stages"]`` seconds summed."""
    from webapp.jobs.models import Job

    stages: dict[str, float] = {}
    counts: dict[str, int] = {}
    busy = 0.0
    chunks = Job.objects.filter(parent_id=run.pk)
    for result, started, finished in chunks.values_list("result", "started_at", "finished_at"):
        for name, seconds in ((result or {}).get("stages") or {}).items():
            stages[name] = stages.get(name, 0.0) + float(seconds)
        for name in ("documents", "mentions", "links", "failed", "skipped"):
            counts[name] = counts.get(name, 0) + int((result or {}).get(name) or 0)
        if started and finished:
            busy += (finished - started).total_seconds()
    total = sum(stages.values())
    return {"chunks": chunks.count(), **counts, "chunk_seconds": round(busy, 1),
            "stages_s": {k: round(v, 1) for k, v in stages.items()},
            "stage_share": {k: round(v / total, 3) for k, v in stages.items()} if total else {},
            # the database writes: the stages named "write" or "write:<what>" (the chunk's own names)
            "write_share": round(sum(v for k, v in stages.items() if k.split(":")[0] == "write") / total, 3) if total else None}


def annotate(source: Any, database: str, cfg: Any, log_dir: Path) -> dict[str, Any]:
    """The scaling runs; the stage's result."""
    from webapp.corpus.models import Collection

    n = cfg.annotate or source.documents.count()
    chunk_size = cfg.chunk_size or max(1, min(200, -(-n // (4 * max(cfg.workers)))))
    queue = os.environ["TASK_QUEUE_OVERRIDE"]
    mode = Collection.Detection.MATCHER_AND_TAGGER
    warmup = make_collection(f"{source.slug}-warmup{max(cfg.workers)}", mode)
    if not warmup.documents.exists():
        copy_documents(source, warmup, max(cfg.workers))
    before_sizes = sizes()
    runs: dict[str, Any] = {}
    for w in cfg.workers:
        target = make_collection(f"{source.slug}-w{w}-{int(time.time())}", mode)
        copied = copy_documents(source, target, n)
        say(f"{w} worker process(es): starting them; {copied:,} documents in {target.slug}, chunks of {chunk_size} ...")
        threads = cfg.threads or max(1, (os.cpu_count() or 1) // w)
        workers = start_workers(w, queue, database, log_dir, threads)
        try:
            _, warm_s = run_and_wait(Collection.objects.get(pk=warmup.pk), 1, cfg.timeout_s)
            say(f"warmed up in {warm_s:.1f} s; the timed run ...")
            pg0 = pg_snapshot()
            with Sampler(workers, database) as sampled:
                run, seconds = run_and_wait(target, chunk_size, cfg.timeout_s)
            time.sleep(1.0)  # the backends flush their statistics
            pg = pg_delta(pg0, pg_snapshot())
        finally:
            stop_workers(workers)
        profile = chunk_profile(run)
        rate = copied / seconds * 60
        runs[str(w)] = {
            "collection": target.slug, "documents": copied, "threads_per_worker": threads, "warmup_s": round(warm_s, 1), "wall_s": round(seconds, 1),
            "abstracts_per_min": round(rate, 1),
            "peak_rss_mb_per_worker": [round(x) for x in sampled.peak_mb], "peak_rss_mb_max_process": round(sampled.peak_process_mb),
            "worker_cpu_s": [round(x, 1) for x in sampled.cpu_s], "postgres_cpu_s": sampled.postgres_cpu_s(),
            "postgres": pg, **profile,
        }
        say(f"{w} worker(s): {copied:,} abstracts in {seconds:.1f} s = {rate:,.0f}/min")
    base = runs[str(cfg.workers[0])]["abstracts_per_min"] / cfg.workers[0]
    for w in cfg.workers:
        runs[str(w)]["efficiency_vs_linear"] = round(runs[str(w)]["abstracts_per_min"] / (w * base), 3)
    after = sizes()
    annotated = sum(r["documents"] for r in runs.values())
    grown = {t: after[f"{t}_bytes"] - before_sizes[f"{t}_bytes"] for t in ("corpus_mention", "corpus_link")}
    return {
        "documents": n, "chunk_size": chunk_size, "workers": cfg.workers,
        "how": "W separate `celery -A webapp worker --concurrency 1` processes on one private queue (WORKER_THREADS "
               "each as --threads says); each run over "
               "its own copy of the same first N documents; after a warm-up run of W one-document chunks",
        "runs": runs,
        "annotation_size_per_100k_documents_mb": {t.removeprefix("corpus_"): round(b * 100_000 / annotated / 2**20, 1)
                                                  for t, b in grown.items()} if annotated else {},
        "mentions_per_document": round(runs[str(cfg.workers[0])].get("mentions", 0) / max(1, n), 2),
        "links_per_document": round(runs[str(cfg.workers[0])].get("links", 0) / max(1, n), 2),
        "sizes_after": after,
    }
