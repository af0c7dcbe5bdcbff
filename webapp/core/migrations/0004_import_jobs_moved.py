"""Import jobs now live in the imports app (imports.0001 copied them): the core table goes."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("core", "0003_import_job_progress_total"),
        ("imports", "0001_import_jobs"),
    ]

    operations = [
        migrations.DeleteModel(name="ImportJob"),
    ]
