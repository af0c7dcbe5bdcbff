"""Where pgvector indexes live (:mod:`linker.pgvector_index`): the database this process reaches them in, and
dropping an index's table.

Light on purpose (no numpy, no faiss): a web process says once at start-up how to reach the database
(:func:`use_database`) and drops the table of a deleted index version, and neither needs the index code, which
imports faiss (issue #45: ``django.setup()`` imports no torch nor faiss).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["Connect", "use_database", "database", "drop_table", "has_vector_extension"]

Connect = Callable[[], Any]  # a new DB-API connection (psycopg's; autocommit is set on it)
_connect: Connect | None = None


def use_database(connect: Connect | None) -> None:
    """Where pgvector indexes are built and searched from now on in this process (None: nowhere)."""
    global _connect
    _connect = connect


def database() -> Connect:
    if _connect is None:
        raise RuntimeError("a pgvector index needs a database: call linker.pgvector_index.use_database first")
    return _connect


def has_vector_extension(connect: Connect) -> bool:
    """Whether the database can hold vectors (creates the extension where it is installed but not yet created)."""
    conn = _open(connect)
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        return True
    except Exception:  # noqa: BLE001 - any refusal means no pgvector here, and the caller says so
        return False
    finally:
        conn.close()


def _open(connect: Connect) -> Any:
    conn = connect()
    conn.autocommit = True
    return conn


_TABLE = re.compile(r"linker_vectors_[0-9a-f]{32}")  # the only names interpolated into SQL


def drop_table(folder: str | Path, connect: Connect | None = None) -> str | None:
    """Drop the table of the pgvector index saved in ``folder`` (an artifact's ``index/``); its name, or None when
    the folder holds another kind of index."""
    path = Path(folder) / "index.json"
    if not path.is_file():
        return None
    meta = json.loads(path.read_text())
    table = meta.get("table")
    if meta.get("config", {}).get("kind") != "pgvector" or not table or not _TABLE.fullmatch(str(table)):
        return None
    conn = _open(connect or database())
    try:
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    finally:
        conn.close()
    return str(table)
