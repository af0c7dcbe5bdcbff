import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='Job',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(db_index=True, help_text='What the job does (webapp.jobs.kinds).', max_length=32)),
                ('state', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('succeeded', 'Succeeded'), ('failed', 'Failed'), ('cancelled', 'Cancelled')], default='queued', max_length=16)),
                ('progress', models.PositiveBigIntegerField(default=0, help_text='Units done (records, names, steps).')),
                ('progress_total', models.PositiveBigIntegerField(blank=True, help_text='Units in all; empty if unknown.', null=True)),
                ('progress_note', models.CharField(blank=True, help_text="Where it is, in words: 'epoch 2 of 5'.", max_length=200)),
                ('error', models.TextField(blank=True, help_text='Why it failed, naming what was wrong.')),
                ('note', models.TextField(blank=True, help_text="The latest remark other than a failure: 'queued again because …'.")),
                ('result', models.JSONField(blank=True, default=dict, help_text="What it made, in brief ({'summary': ...}).")),
                ('cancel_requested', models.BooleanField(default=False, help_text='Someone asked it to stop; it does at its next report.')),
                ('attempts', models.PositiveSmallIntegerField(default=0, help_text='Times a worker started it.')),
                ('worker', models.CharField(blank=True, help_text='Host name of the worker running it.', max_length=200)),
                ('task_id', models.CharField(blank=True, help_text='Its Celery task id.', max_length=64)),
                ('heartbeat_at', models.DateTimeField(blank=True, help_text="The runner's last sign of life (heartbeat kinds).", null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('parent', models.ForeignKey(blank=True, help_text='The job this one is a chunk of.', null=True, on_delete=django.db.models.deletion.CASCADE, related_name='children', to='jobs.job')),
            ],
            options={
                'ordering': ['-created_at', '-id'],
                'indexes': [models.Index(fields=['state', 'heartbeat_at'], name='job_state_heartbeat'), models.Index(fields=['kind', 'state'], name='job_kind_state')],
            },
        ),
    ]
