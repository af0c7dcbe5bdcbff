"""EncoderModel, IndexVersion and DetectorVersion are serving's (webapp.linking's 0001): gone from training's state.

Django's state only: the tables, rows and foreign keys stay as they are (the moved models keep their db_table);
training's foreign keys to them now name linking's models. Their content types follow them, so that admin
permissions and log entries keep pointing at the same models.
"""

import django.db.models.deletion
from django.apps.registry import Apps
from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor

MOVED = ("encodermodel", "indexversion", "detectorversion")


def _content_types_to(app_label: str):  # noqa: ANN202 -- a RunPython function
    """Moves the moved models' content types (if any were made yet) to ``app_label``."""
    source = "training" if app_label == "linking" else "linking"

    def move(apps: Apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
        content_type = apps.get_model("contenttypes", "ContentType")
        db = schema_editor.connection.alias
        taken = set(content_type.objects.using(db).filter(app_label=app_label, model__in=MOVED).values_list("model", flat=True))
        content_type.objects.using(db).filter(app_label=source, model__in=set(MOVED) - taken).update(app_label=app_label)

    return move


class Migration(migrations.Migration):

    dependencies = [
        ('contenttypes', '0002_remove_content_type_name'),
        ('linking', '0001_initial'),
        ('training', '0014_trainingrun_method_registered'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(
                    model_name='encodermodel',
                    name='created_by',
                ),
                migrations.RemoveField(
                    model_name='encodermodel',
                    name='parent',
                ),
                migrations.AlterField(
                    model_name='trainingrun',
                    name='encoder',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='training_runs', to='linking.encodermodel'),
                ),
                migrations.RemoveField(
                    model_name='indexversion',
                    name='first_stage',
                ),
                migrations.RemoveField(
                    model_name='indexversion',
                    name='encoder',
                ),
                migrations.RemoveField(
                    model_name='indexversion',
                    name='build',
                ),
                migrations.RemoveField(
                    model_name='indexversion',
                    name='created_by',
                ),
                migrations.RemoveField(
                    model_name='indexversion',
                    name='dictionary',
                ),
                migrations.RemoveField(
                    model_name='indexversion',
                    name='dictionary_version',
                ),
                migrations.AlterField(
                    model_name='trainingrun',
                    name='index_version',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='training_runs', to='linking.indexversion'),
                ),
                migrations.AlterField(
                    model_name='evaluation',
                    name='index_version',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='evaluations', to='linking.indexversion'),
                ),
                migrations.DeleteModel(
                    name='DetectorVersion',
                ),
                migrations.DeleteModel(
                    name='EncoderModel',
                ),
                migrations.DeleteModel(
                    name='IndexVersion',
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(_content_types_to("linking"), _content_types_to("training")),
    ]
