"""Bulk writes through PostgreSQL ``COPY`` (psycopg 3 ``cursor.copy``), shared by the importers.

``bulk_create`` spends more time binding parameters client-side than the server spends storing the rows
(70K names of a MEDIC release); COPY streams them. COPY returns no ids: callers read them back by a key.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connection, models

__all__ = ["copy_rows", "copy_into", "max_length"]


def max_length(model: type[models.Model], field_name: str) -> int:
    """The declared max_length of a CharField, so checks here follow the model if it changes."""
    length = getattr(model._meta.get_field(field_name), "max_length", None)
    if not isinstance(length, int):
        raise TypeError(f"{model.__name__}.{field_name} has no max_length")
    return length


def copy_rows(model: type[models.Model], fields: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
    """Write rows into ``model``'s table with PostgreSQL COPY; returns the number of rows written.

    ``fields`` are model field names (``concept`` for a foreign key, written as its ``concept_id`` column).
    Columns left out take their database default (the identity id, NULL). Errors come back as Django's
    ``DatabaseError`` subclasses, as for any other query.
    """
    return copy_into(model._meta.db_table, [_column(model, f) for f in fields], rows)


def copy_into(table_name: str, column_names: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
    """COPY rows into a table by its own name and column names (a staging table an importer created)."""
    quote = connection.ops.quote_name
    table = quote(table_name)
    columns = ", ".join(quote(c) for c in column_names)
    count = 0
    with connection.wrap_database_errors, connection.cursor() as cursor:
        with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
                count += 1
    return count


def _column(model: type[models.Model], field_name: str) -> str:
    field = model._meta.get_field(field_name)
    if not isinstance(field, models.Field) or not field.column:
        raise TypeError(f"{model.__name__}.{field_name} is not a concrete column")
    return field.column
