"""One consistent snapshot of the database for a long read that yields as it goes (a streamed export).

:func:`in_snapshot` runs a generator on a connection of its own, in a ``REPEATABLE READ, READ ONLY`` transaction
opened when the first item is asked for and ended (rolled back: it wrote nothing) when the generator is exhausted,
fails or is closed (a client that disconnects: Django closes a streaming response's iterator). Every query the
generator makes between two items, through the ORM or a cursor of ``alias``, sees the same snapshot, whatever other
transactions commit meanwhile (a corpus run writing mentions into the collection being exported).

Why its own connection: a streaming response's iterator runs after the view has returned, while the request's
connection is handed back between items (and closed by ``request_finished`` once the response is). The snapshot's
connection is put in place of the thread's for the alias only while the generator runs, then swapped back, so
nothing else in the thread reads in (or ends) the export's transaction.

Called inside a transaction (``atomic``: a test, or a caller that has its own snapshot) it reads in that
transaction instead: a new connection would not see what that transaction has not committed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypeVar

from django.db import DEFAULT_DB_ALIAS, connections

T = TypeVar("T")

ISOLATION = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"


def in_snapshot(make: Callable[[], Iterator[T]], alias: str = DEFAULT_DB_ALIAS) -> Iterator[T]:
    """Yield what ``make()`` yields, every query it makes reading one snapshot taken at its first item."""
    if connections[alias].in_atomic_block:
        yield from make()
        return
    own = connections.create_connection(alias)
    items: Iterator[T] | None = None
    try:
        with _using(alias, own):
            own.set_autocommit(False)  # psycopg begins the transaction at the first statement: this one
            with own.cursor() as cursor:
                cursor.execute(ISOLATION)
            items = make()
        while True:
            with _using(alias, own):
                try:
                    item = next(items)
                except StopIteration:
                    return
            yield item
    finally:
        # Exhausted, failed, or closed by the consumer (GeneratorExit at the yield): end the read and the connection.
        close = getattr(items, "close", None)
        if close is not None:
            with _using(alias, own):
                close()
        try:
            if own.connection is not None:
                own.rollback()
        finally:
            own.close()


class _using:
    """Put ``connection`` in the thread's place for ``alias`` for a ``with`` block, then the one that was there."""

    def __init__(self, alias: str, connection: object) -> None:
        self.alias, self.connection = alias, connection

    def __enter__(self) -> None:
        self.before = connections[self.alias]
        connections[self.alias] = self.connection

    def __exit__(self, *exc: object) -> None:
        connections[self.alias] = self.before
