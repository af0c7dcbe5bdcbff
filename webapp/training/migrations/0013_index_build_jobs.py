"""Each index version's build becomes a job (webapp.jobs, kind ``index-build``), made here for every existing version
in the state its build ended in (or ``queued``/``running`` for one still building)."""

import django.db.models.deletion
from django.db import migrations, models

from webapp.jobs.migration_ops import copy_into_jobs

STATE = ("CASE t.state WHEN 'building' THEN (CASE WHEN t.started_at IS NULL THEN 'queued' ELSE 'running' END) "
         "WHEN 'failed' THEN 'failed' WHEN 'cancelled' THEN 'cancelled' ELSE 'succeeded' END")


def build_jobs(apps, schema_editor):
    mapping = copy_into_jobs(schema_editor, "training_indexversion", "index-build", {
        "state": STATE, "error": "CASE WHEN t.state IN ('failed', 'cancelled') THEN t.error ELSE '' END",
        "progress": "t.progress", "progress_total": "t.progress_total", "cancel_requested": "t.cancel_requested",
        "created_by_id": "t.created_by_id", "created_at": "t.created_at", "started_at": "t.started_at",
        "finished_at": "t.finished_at", "attempts": "CASE WHEN t.started_at IS NULL THEN 0 ELSE 1 END",
    })
    with schema_editor.connection.cursor() as cursor:
        cursor.executemany("UPDATE training_indexversion SET build_id = %s WHERE id = %s",
                           [(job, index) for index, job in mapping.items()])
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


class Migration(migrations.Migration):

    dependencies = [
        ("jobs", "0001_job"),
        ("training", "0012_runs_evaluations_uploads_are_jobs"),
    ]

    operations = [
        migrations.AddField(
            model_name="indexversion",
            name="build",
            field=models.OneToOneField(blank=True, help_text="The job that builds it (webapp.jobs): queued, running, then ended with the build.", null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="built_index", to="jobs.job"),
        ),
        migrations.RunPython(build_jobs, elidable=False),
    ]
