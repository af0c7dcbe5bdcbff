"""pgvector index tables (linker.pgvector_index) in this app's database: where the linker reaches them, and each
dropped with its index version.

The linker package imports no Django; it is handed a factory of plain psycopg connections to the database Django
uses (read at each call: a test database is the one the tests run on). The index keeps its own connection, outside
any request's transaction, so that a search never waits on, nor rolls back with, the page's work.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import psycopg
from django.db import connection, transaction

from linker.pgvector_db import drop_table, use_database

__all__ = ["connect", "install", "drop_index_table", "drop_partial_table"]

log = logging.getLogger(__name__)


def connect() -> Any:
    """A new connection to Django's default database, autocommit."""
    return psycopg.connect(**connection.get_connection_params(), autocommit=True)


def install() -> None:
    """Builds and loads of pgvector indexes in this process use Django's database (the app's ready())."""
    use_database(connect)


def drop_index_table(instance: Any, **_: object) -> None:
    """An IndexVersion was deleted (post_delete): once that commits, drop its pgvector table, if it had one and its
    artifact folder is on this host (a folder only in the store: the table stays until a host holding it drops it)."""
    if not instance.artifact_path:
        return
    folder = Path(instance.artifact_path) / "index"

    def drop() -> None:
        try:
            table = drop_table(folder, connect)
        except (OSError, psycopg.Error) as exc:
            log.warning("index version %s: its pgvector table was not dropped: %s", instance.pk, exc)
            return
        if table:
            log.info("index version %s: dropped its pgvector table %s", instance.pk, table)

    transaction.on_commit(drop)


def drop_partial_table(folder: Path) -> None:
    """A build that failed or was cancelled after saving its artifact into ``folder``: drop the pgvector table it
    made, if any (one that failed before saving leaves its table: its name was never written down)."""
    try:
        drop_table(Path(folder) / "index", connect)
    except (OSError, psycopg.Error) as exc:
        log.warning("%s: its pgvector table was not dropped: %s", folder, exc)
