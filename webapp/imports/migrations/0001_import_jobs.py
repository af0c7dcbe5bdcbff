"""Import jobs move from the core app to their own, as jobs (webapp.jobs): each row of ``core_importjob`` becomes a
job and an ``imports_importjob`` row (new ids: nothing else points at an import job). ``message`` becomes the job's
``error`` when the import failed and its ``note`` otherwise (a sweep's "queued again")."""

import django.db.models.deletion
from django.db import migrations, models

from webapp.jobs.migration_ops import copy_into_jobs


def copy_imports(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass('core_importjob') IS NOT NULL")
        if not cursor.fetchone()[0]:
            return
    mapping = copy_into_jobs(schema_editor, "core_importjob", "import", {
        "state": "t.state", "progress": "t.progress", "progress_total": "t.progress_total",
        "error": "CASE WHEN t.state = 'failed' THEN t.message ELSE '' END",
        "note": "CASE WHEN t.state = 'failed' THEN '' ELSE t.message END",
        "worker": "t.worker", "created_by_id": "t.created_by_id", "created_at": "t.created_at",
        "started_at": "t.started_at", "finished_at": "t.finished_at",
        "attempts": "CASE WHEN t.started_at IS NULL THEN 0 ELSE 1 END",
    })
    with schema_editor.connection.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO imports_importjob (job_ptr_id, import_kind, path, params, report) "
            "SELECT %s, kind, path, params, report FROM core_importjob WHERE id = %s",
            [(new, old) for old, new in mapping.items()])
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("core", "0003_import_job_progress_total"),
        ("jobs", "0001_job"),
        ("training", "0013_index_build_jobs"),  # runs keep their ids: their jobs come first
    ]

    operations = [
        migrations.CreateModel(
            name="ImportJob",
            fields=[
                ("job_ptr", models.OneToOneField(auto_created=True, on_delete=django.db.models.deletion.CASCADE, parent_link=True, primary_key=True, serialize=False, to="jobs.job")),
                ("import_kind", models.CharField(choices=[("dictionary", "Dictionary"), ("documents", "Documents")], help_text="What the file holds.", max_length=16)),
                ("path", models.CharField(help_text="File on a volume the workers can read.", max_length=1000)),
                ("params", models.JSONField(blank=True, default=dict, help_text="Keyword arguments of the importer.")),
                ("report", models.JSONField(blank=True, default=dict, help_text="The importer's report of a finished import.")),
            ],
            options={"ordering": ["-created_at", "-id"]},
            bases=("jobs.job",),
        ),
        migrations.RunPython(copy_imports, elidable=False),
    ]
