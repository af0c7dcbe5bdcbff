"""What the migrations that made the domain jobs (imports, training runs, evaluations, word-vector uploads) rows of
the one job table need: the copy of each row's life cycle into ``jobs_job`` and a state operation that gives a
model a new base class (Django's autodetector leaves bases alone, and has no operation for them).

A converted model keeps its table and its other columns; its ``id`` becomes the id of its job (multi-table
inheritance: the child's primary key is its parent's). The first kind converted keeps its ids (a training run's
address, bookmarked and quoted in notes, stays the same); the others take new ones, and every column that pointed
at an old id (foreign keys, one-to-ones, many-to-many tables) is rewritten in the same transaction.
"""

from __future__ import annotations

from typing import Any

from django.db.migrations.operations.base import Operation

JOB_COLUMNS = ("kind", "state", "progress", "progress_total", "progress_note", "error", "note", "result",
               "cancel_requested", "attempts", "worker", "task_id", "heartbeat_at", "created_by_id", "created_at",
               "started_at", "finished_at")
DEFAULTS = {"progress": "0", "progress_note": "''", "error": "''", "note": "''", "result": "'{}'::jsonb",
            "cancel_requested": "false", "worker": "''", "task_id": "''", "heartbeat_at": "NULL",
            "progress_total": "NULL", "created_by_id": "NULL", "started_at": "NULL", "finished_at": "NULL"}


class AlterModelBases(Operation):
    """Set a model's bases in the migration state only (its table is changed by the operations around it)."""

    reduces_to_sql = False
    reversible = True

    def __init__(self, name: str, bases: tuple[Any, ...]) -> None:
        self.name = name
        self.bases = bases

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        return self.__class__.__qualname__, [], {"name": self.name, "bases": self.bases}

    def state_forwards(self, app_label: str, state: Any) -> None:
        state.models[app_label, self.name.lower()].bases = self.bases
        state.reload_model(app_label, self.name.lower(), delay=False)

    def database_forwards(self, *args: Any) -> None:
        pass

    def database_backwards(self, *args: Any) -> None:
        pass

    def describe(self) -> str:
        return f"Set the bases of {self.name}"


def copy_into_jobs(schema_editor: Any, table: str, kind: str, columns: dict[str, str], keep_ids: bool = False
                   ) -> dict[int, int]:
    """Insert one job per row of ``table`` (``columns``: job column -> SQL expression over the row); returns the
    mapping old id -> job id. ``keep_ids``: each job takes its row's id (the job table must hold none of them)."""
    exprs = {name: DEFAULTS.get(name, "NULL") for name in JOB_COLUMNS} | {"attempts": "0"} | columns
    exprs["kind"] = f"'{kind}'"
    names = list(exprs)
    if keep_ids:
        names, select = ["id", *names], ["t.id", *(exprs[n] for n in names)]
    else:
        select = [exprs[n] for n in names]
    mapping: dict[int, int] = {}
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"SELECT id FROM {table} ORDER BY id")
        for (old,) in cursor.fetchall():
            cursor.execute(f"INSERT INTO jobs_job ({', '.join(names)}) SELECT {', '.join(select)} FROM {table} t "
                           "WHERE t.id = %s RETURNING id", [old])
            mapping[old] = cursor.fetchone()[0]
        if keep_ids:
            cursor.execute("SELECT setval(pg_get_serial_sequence('jobs_job', 'id'), "
                           "GREATEST((SELECT max(id) FROM jobs_job), 1))")
    return mapping


def renumber(schema_editor: Any, model: Any, mapping: dict[int, int]) -> None:
    """Give the rows of ``model`` their job's id, and every column that points at them the same: through negative
    values first, so that no two rows hold one id meanwhile. Constraint checks are then run at once (a table with
    checks still pending cannot be altered later in the same migration)."""
    moved = {old: new for old, new in mapping.items() if old != new}
    if not moved:
        return
    targets = [(model._meta.db_table, "id")]
    for rel in model._meta.get_fields(include_hidden=True):
        # Reverse foreign keys and one-to-ones, hidden ones included (a many-to-many table's column to it).
        if rel.auto_created and not rel.concrete and (rel.one_to_many or rel.one_to_one):
            targets.append((rel.related_model._meta.db_table, rel.field.column))
    for field in model._meta.local_many_to_many:  # the model's own many-to-many tables point at it too
        through = field.remote_field.through
        targets.append((through._meta.db_table, field.m2m_column_name()))
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("CREATE TEMPORARY TABLE _job_ids (old bigint PRIMARY KEY, new bigint) ON COMMIT DROP")
        cursor.executemany("INSERT INTO _job_ids VALUES (%s, %s)", list(moved.items()))
        for table, column in dict.fromkeys(targets):
            cursor.execute(f'UPDATE {table} t SET "{column}" = -m.new FROM _job_ids m WHERE t."{column}" = m.old')
            cursor.execute(f'UPDATE {table} SET "{column}" = -"{column}" WHERE "{column}" < 0')
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("DROP TABLE _job_ids")


def link_to_job_sql(table: str) -> list[str]:
    """The converted table's ``id``: no longer generated, a foreign key to its job."""
    return [f"ALTER TABLE {table} ALTER COLUMN id DROP IDENTITY IF EXISTS",
            f"ALTER TABLE {table} ALTER COLUMN id DROP DEFAULT",
            f"ALTER TABLE {table} ADD CONSTRAINT {table}_id_job_fk FOREIGN KEY (id) REFERENCES jobs_job (id) "
            "DEFERRABLE INITIALLY DEFERRED"]
