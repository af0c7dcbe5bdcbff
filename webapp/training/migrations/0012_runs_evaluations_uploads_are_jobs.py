"""Training runs, evaluations and word-vector uploads become jobs (webapp.jobs): each row's life cycle (state,
error, times, worker, heartbeat, cancel request, who queued it) moves into ``jobs_job`` and the row's ``id`` becomes
its job's. Training runs keep their ids; evaluations and uploads take new ones, every column pointing at them
(and the promotion gate's verdicts naming evaluations) rewritten with them. Not reversible."""

import django.db.models.deletion
from django.db import migrations, models

from webapp.jobs.migration_ops import AlterModelBases, copy_into_jobs, link_to_job_sql, renumber

COMMON = {"state": "t.state", "error": "t.error", "created_by_id": "t.created_by_id", "created_at": "t.created_at",
          "finished_at": "t.finished_at"}
KINDS = [  # model, job kind, columns, keeps its ids
    ("TrainingRun", "training", COMMON | {
        "created_at": "t.queued_at", "started_at": "t.started_at", "heartbeat_at": "t.heartbeat_at",
        "worker": "t.worker", "task_id": "t.task_id", "cancel_requested": "t.cancel_requested",
        "progress": "t.step", "progress_total": "NULLIF(t.total_steps, 0)", "progress_note": "left(t.phase, 200)",
        "attempts": "CASE WHEN t.started_at IS NULL THEN 0 ELSE 1 END"}, True),
    ("Evaluation", "evaluation", COMMON, False),
    ("WordVectorUpload", "word-vectors", COMMON, False),
]
MOVED = {
    "TrainingRun": ["state", "error", "created_by", "queued_at", "started_at", "finished_at", "heartbeat_at", "worker",
                    "task_id", "cancel_requested"],
    "Evaluation": ["state", "error", "created_by", "created_at", "finished_at"],
    "WordVectorUpload": ["state", "error", "created_by", "created_at", "finished_at"],
}


def to_jobs(apps, schema_editor):
    for name, kind, columns, keep_ids in KINDS:
        model = apps.get_model("training", name)
        mapping = copy_into_jobs(schema_editor, model._meta.db_table, kind, columns, keep_ids=keep_ids)
        renumber(schema_editor, model, mapping)
        if name == "Evaluation":
            _renumber_gate_results(apps, mapping)
    with schema_editor.connection.cursor() as cursor:  # no checks left pending for the tables altered next
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def _renumber_gate_results(apps, mapping):
    """A run's promotion-gate verdict names the evaluations it compared."""
    TrainingRun = apps.get_model("training", "TrainingRun")
    for run in TrainingRun.objects.exclude(gate_result={}).only("pk", "gate_result"):
        verdict = dict(run.gate_result)
        for key in ("evaluation", "active_evaluation"):
            if isinstance(verdict.get(key), int) and verdict[key] in mapping:
                verdict[key] = mapping[verdict[key]]
        if verdict != run.gate_result:
            TrainingRun.objects.filter(pk=run.pk).update(gate_result=verdict)


def _parent_link():
    return models.OneToOneField(auto_created=False, db_column="id", on_delete=django.db.models.deletion.CASCADE,
                                parent_link=True, primary_key=True, serialize=False, to="jobs.job")


def _become_job(name):
    table = f"training_{name.lower()}"
    return migrations.SeparateDatabaseAndState(
        database_operations=[migrations.RunSQL(link_to_job_sql(table))],
        state_operations=[
            migrations.RemoveField(model_name=name.lower(), name="id"),
            migrations.AddField(model_name=name.lower(), name="job_ptr", field=_parent_link(), preserve_default=False),
            AlterModelBases(name, ("jobs.job",)),
        ],
    )


class Migration(migrations.Migration):

    dependencies = [
        ("jobs", "0001_job"),
        ("training", "0011_retrain_policy_last_error"),
    ]

    operations = [
        migrations.RunPython(to_jobs, elidable=False),
        migrations.RemoveIndex(model_name="trainingrun", name="trainingrun_state_heartbeat"),
        *(migrations.RemoveField(model_name=model.lower(), name=field) for model, fields in MOVED.items() for field in fields),
        *(_become_job(name) for name in MOVED),
        migrations.AlterModelOptions(name="trainingrun", options={"ordering": ["-created_at", "-id"]}),
    ]
