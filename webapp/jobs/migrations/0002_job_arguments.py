from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("jobs", "0001_job"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="arguments",
            field=models.JSONField(blank=True, default=dict, help_text="What a kind without a row of its own works on ({'documents': [ids]})."),
        ),
    ]
