"""A dense index kept in PostgreSQL (pgvector's HNSW), searched by SQL: the ``pgvector`` index kind.

At millions of names a faiss index is the web process's largest part (3M x 384 float16 plus a graph: 2-3 GB, and
tens of seconds to read); here the vectors stay in the database and each process holds only the name rows. One table
per built index (``linker_vectors_<hex>``, its name in the artifact's ``index/index.json``): the name row and its
vector (``halfvec`` by default, ``vector`` with ``IndexConfig(vector_dtype="float32")``), with an HNSW index on the
inner product of the normalised vectors (``hnsw_m``, ``hnsw_ef_construction``; ``hnsw_ef_search`` per session).

The linker package imports no Django: the process that builds or serves a pgvector index says once how to reach the
database (:func:`use_database`, a factory of DB-API connections; the web app passes its own settings'), and the index
keeps one connection of its own, outside any request's transaction. That setting and :func:`drop_table` are
:mod:`linker.pgvector_db`'s (no numpy, no faiss), re-exported here.
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from linker.index import DenseIndex
from linker.index_kinds import IndexConfig
from linker.pgvector_db import (  # re-exported
    _TABLE,
    Connect,
    _open,
    database,
    drop_table,
    has_vector_extension,
    use_database,
)

__all__ = ["PgVectorIndex", "build_index", "load_index", "use_database", "database", "drop_table", "has_vector_extension"]


def _literal(vector: np.ndarray) -> str:
    # float32 repr rounds to 9 significant digits at most; pgvector parses the text form.
    return "[" + ",".join(f"{x:.7g}" for x in vector.tolist()) + "]"


class PgVectorIndex(DenseIndex):
    """A :class:`linker.index.DenseIndex` (``search``, ``pair_scores``, ``vectors``, ``rows``, ``save``/``load``)
    whose vectors are a PostgreSQL table: the retriever, the delta and the artifact take either unchanged."""

    def __init__(self, dim: int, config: IndexConfig, table: str, rows: np.ndarray, connect: Connect) -> None:
        super().__init__(dim, config)
        if not _TABLE.fullmatch(table):
            raise ValueError(f"not a pgvector index table: {table!r}")
        self.table = table
        self._rows = rows
        self._connect = connect
        self._conn: Any = None
        self._pid = 0  # the process that opened the connection
        self._ef: int | None = None  # the hnsw.ef_search set on it
        self._lock = threading.Lock()  # one connection, one statement at a time (web servers run threads)

    def __len__(self) -> int:
        return int(self._rows.shape[0])

    @property
    def rows(self) -> np.ndarray:
        return self._rows

    @property
    def column_type(self) -> str:
        return "vector" if self.config.vector_dtype == "float32" else "halfvec"

    @classmethod
    def build(cls, vectors: np.ndarray, rows: np.ndarray | None = None, config: IndexConfig | None = None,
              connect: Connect | None = None) -> PgVectorIndex:
        """A new table of ``vectors`` [n, d] (normalised: inner product is cosine) under HNSW."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        rows_arr = np.arange(len(vectors), dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
        cfg = (config or IndexConfig(kind="pgvector")).resolved(len(vectors))
        index = cls(vectors.shape[1], cfg, f"linker_vectors_{uuid.uuid4().hex}", rows_arr, connect or database())
        index._create(vectors)
        return index

    def _create(self, vectors: np.ndarray) -> None:
        conn = self._connection()
        kind, cfg = self.column_type, self.config
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(f"CREATE TABLE {self.table} (row bigint PRIMARY KEY, embedding {kind}({self.dim}) NOT NULL)")
        with conn.cursor() as cur, cur.copy(f"COPY {self.table} (row, embedding) FROM STDIN") as copy:
            for row, vec in zip(self._rows.tolist(), vectors, strict=True):
                copy.write_row((row, _literal(vec)))
        # The graph is built in memory when it fits maintenance_work_mem, else far slower on disk pages: ask for
        # what it needs (each node: its vector, 2m neighbours on layer 0, a header), a quarter over.
        per_node = self.dim * (4 if kind == "vector" else 2) + 2 * cfg.hnsw_m * 8 + 64
        conn.execute(f"SET maintenance_work_mem = '{max(64, int(len(vectors) * per_node * 1.25 / 2**20))}MB'")
        conn.execute(f"CREATE INDEX ON {self.table} USING hnsw (embedding {kind}_ip_ops) "
                     f"WITH (m = {int(cfg.hnsw_m)}, ef_construction = {int(cfg.hnsw_ef_construction)})")
        conn.execute(f"ANALYZE {self.table}")

    def _connection(self) -> Any:
        if self._conn is None or self._conn.closed or self._pid != os.getpid():
            # A process forked from the one that opened it (a preloading server) opens its own.
            self._conn, self._pid, self._ef = _open(self._connect), os.getpid(), None
        return self._conn

    def _query(self, sql: str, params: tuple[Any, ...], ef_search: int | None = None) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                return self._run(sql, params, ef_search)
            except Exception:
                # A connection the server dropped (a restart, an idle timeout): once more on a new one.
                if self._conn is not None and not self._conn.closed:
                    raise
                self._conn = None
                return self._run(sql, params, ef_search)

    def _run(self, sql: str, params: tuple[Any, ...], ef_search: int | None) -> list[tuple[Any, ...]]:
        conn = self._connection()
        if ef_search is not None and ef_search != self._ef:  # a session setting: set once per connection and value
            conn.execute(f"SET hnsw.ef_search = {int(ef_search)}")
            self._ef = ef_search
        return list(conn.execute(sql, params).fetchall())

    def search(self, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Queries [n, d] -> (inner products [n, k] float32, name rows [n, k] int64; -1 where fewer than k)."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        n, k = len(vectors), max(k, 0)
        scores, out = np.full((n, k), -np.inf, np.float32), np.full((n, k), -1, np.int64)
        if k == 0 or len(self) == 0:
            return np.zeros((n, k), np.float32), out
        # pgvector's HNSW returns at most ef_search rows: never fewer than asked for (1000 is its ceiling).
        ef = min(1000, max(self.config.hnsw_ef_search, k))
        sql = (f"SELECT row, -(embedding <#> %s::{self.column_type}) FROM {self.table} "
               f"ORDER BY embedding <#> %s::{self.column_type} LIMIT %s")
        for i, vec in enumerate(vectors):
            literal = _literal(vec)
            found = self._query(sql, (literal, literal, k), ef_search=ef)
            for j, (row, score) in enumerate(found):
                out[i, j], scores[i, j] = row, score
        return scores, out

    def _scores_of(self, query: np.ndarray, rows: list[int]) -> dict[int, float]:
        sql = f"SELECT row, -(embedding <#> %s::{self.column_type}) FROM {self.table} WHERE row = ANY(%s)"
        return {int(r): float(s) for r, s in self._query(sql, (_literal(query), rows))}

    def pair_scores(self, queries: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Inner products of queries [n, d] with the names at ``rows`` [n, m] -> [n, m] (-inf: not held here)."""
        out = np.full(rows.shape, -np.inf, dtype=np.float32)
        for i in range(rows.shape[0]):
            wanted = [int(r) for r in rows[i] if r >= 0]
            if not wanted:
                continue
            found = self._scores_of(np.asarray(queries[i], np.float32), wanted)
            out[i] = [found.get(int(r), -np.inf) if r >= 0 else -np.inf for r in rows[i]]
        return out

    def vectors(self, rows: np.ndarray | list[int]) -> np.ndarray:
        """Stored vectors of name rows [n] -> [n, d] (float32)."""
        wanted = np.asarray(rows, dtype=np.int64).ravel()
        sql = f"SELECT row, embedding::text FROM {self.table} WHERE row = ANY(%s)"
        found = {int(r): np.array(json.loads(text), np.float32) for r, text in self._query(sql, (wanted.tolist(),))}
        return np.stack([found[int(r)] for r in wanted]) if len(wanted) else np.zeros((0, self.dim), np.float32)

    def table_bytes(self) -> int:
        """The table's size with its indexes (the HNSW graph and the primary key)."""
        return int(self._query("SELECT pg_total_relation_size(%s::regclass)", (self.table,))[0][0])

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # --- persistence: the folder says which table; the vectors stay in it -----------------------------------

    def save(self, folder: str | Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        np.save(folder / "rows.npy", self._rows)
        meta = {"dim": self.dim, "config": asdict(self.config), "size": len(self), "table": self.table}
        (folder / "index.json").write_text(json.dumps(meta, indent=2) + "\n")

    @classmethod
    def load(cls, folder: str | Path, connect: Connect | None = None) -> PgVectorIndex:
        folder = Path(folder)
        meta = json.loads((folder / "index.json").read_text())
        return cls(int(meta["dim"]), IndexConfig(**meta["config"]), str(meta["table"]), np.load(folder / "rows.npy"),
                   connect or database())


def build_index(vectors: np.ndarray, config: IndexConfig) -> DenseIndex:
    """The index of ``config``'s kind over ``vectors``: a table in the database for ``pgvector``, else faiss."""
    if config.kind == "pgvector":
        return PgVectorIndex.build(vectors, config=config)
    return DenseIndex.build(vectors, config=config)


def load_index(folder: str | Path) -> DenseIndex:
    """The index saved in ``folder``, of whichever kind (a pgvector one reads from :func:`database`)."""
    meta = json.loads((Path(folder) / "index.json").read_text())
    if meta.get("config", {}).get("kind") == "pgvector":
        return PgVectorIndex.load(folder)
    return DenseIndex.load(folder)
