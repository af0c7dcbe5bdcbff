"""The models serving serves, moved from training (issue #42): EncoderModel, IndexVersion and DetectorVersion.

Django's state only: their tables stay training's (``training_encodermodel`` ...), with their rows, constraints
and foreign keys; training's 0015 removes them from training's state.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('jobs', '0002_job_arguments'),
        ('training', '0013_index_build_jobs'),
        ('vocab', '0005_term'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='EncoderModel',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.SlugField(max_length=120, unique=True)),
                        ('method', models.CharField(choices=[('zero_shot', 'Base model, untrained (zero-shot)'), ('synonym_pretrain', 'Synonym pre-training (SapBERT-style)'), ('biosyn', 'BioSyn (synonym marginalisation)'), ('latte', 'LATTE re-ranker over a linker'), ('hiprbert', 'Base encoder: hierarchy pre-training (HiPrBERT)'), ('imported', 'Imported linker artifact'), ('bne', 'BNE (BiLSTM over characters and word vectors)'), ('dan', 'DAN (deep averaging network over word vectors)')], max_length=32)),
                        ('base_model', models.CharField(help_text='Local Hugging Face folder the encoder started from.', max_length=500)),
                        ('config', models.JSONField(blank=True, default=dict, help_text='Hyperparameters and the linker configuration.')),
                        ('artifact_path', models.CharField(help_text='Folder with the encoder weights (or a linker artifact).', max_length=1000)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
                        ('parent', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='children', to='linking.encodermodel')),
                    ],
                    options={
                        'db_table': 'training_encodermodel',
                        'ordering': ['-created_at'],
                    },
                ),
                migrations.CreateModel(
                    name='DetectorVersion',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('label', models.CharField(help_text='Stored on every mention it finds: tagger-run-12.', max_length=120, unique=True)),
                        ('artifact_path', models.CharField(help_text="The tagger's folder (linker.detect.tagger.Tagger.load).", max_length=1000)),
                        ('state', models.CharField(choices=[('ready', 'Ready'), ('active', 'Active'), ('retired', 'Retired')], default='ready', max_length=16)),
                        ('metrics', models.JSONField(blank=True, default=dict, help_text="Span figures on the run's evaluation collection.")),
                        ('mention_types', models.JSONField(blank=True, default=list, help_text='The mention types it was trained on; empty: all.')),
                        ('training_data', models.JSONField(blank=True, default=dict, help_text='Where its training spans came from (counts).')),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('activated_at', models.DateTimeField(blank=True, null=True)),
                        ('retired_at', models.DateTimeField(blank=True, null=True)),
                        ('activated_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('dictionary', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='detector_versions', to='vocab.dictionary')),
                        ('run', models.OneToOneField(blank=True, help_text='The tagger run that trained it.', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='detector_version', to='training.trainingrun')),
                    ],
                    options={
                        'db_table': 'training_detectorversion',
                        'ordering': ['-created_at', '-id'],
                        'constraints': [models.UniqueConstraint(condition=models.Q(('state', 'active')), fields=('dictionary',), name='one_active_detector_per_dictionary')],
                    },
                ),
                migrations.CreateModel(
                    name='IndexVersion',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('artifact_path', models.CharField(blank=True, max_length=1000)),
                        ('state', models.CharField(choices=[('building', 'Building'), ('ready', 'Ready'), ('active', 'Active'), ('retired', 'Retired'), ('failed', 'Failed'), ('cancelled', 'Cancelled')], default='building', max_length=16)),
                        ('name_count', models.PositiveIntegerField(default=0)),
                        ('concept_count', models.PositiveIntegerField(default=0)),
                        ('build_seconds', models.FloatField(blank=True, null=True)),
                        ('error', models.TextField(blank=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('activated_at', models.DateTimeField(blank=True, null=True)),
                        ('retired_at', models.DateTimeField(blank=True, null=True)),
                        ('phase', models.CharField(blank=True, choices=[('', 'Waiting for a worker'), ('reading', 'Reading the names from the database'), ('loading', 'Loading the encoder'), ('tf-idf', 'Fitting tf-idf'), ('encoding', 'Encoding names'), ('first-stage', 'Encoding names with the first stage'), ('faiss', 'Building the faiss index'), ('saving', 'Writing the artifact'), ('done', 'Done')], default='', max_length=16)),
                        ('progress', models.PositiveIntegerField(default=0, help_text='Names done in the current phase.')),
                        ('progress_total', models.PositiveIntegerField(blank=True, help_text='Names of the current phase.', null=True)),
                        ('phase_started_at', models.DateTimeField(blank=True, null=True)),
                        ('progress_at', models.DateTimeField(blank=True, help_text='When progress was last written.', null=True)),
                        ('started_at', models.DateTimeField(blank=True, null=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('activate_when_built', models.BooleanField(default=False, help_text='Activated (and open mentions re-linked) once built.')),
                        ('cancel_requested', models.BooleanField(default=False, help_text='An admin asked the builder to stop; it does between batches.')),
                        ('build', models.OneToOneField(blank=True, help_text='The job that builds it (webapp.jobs): queued, running, then ended with the build.', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='built_index', to='jobs.job')),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
                        ('dictionary', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='index_versions', to='vocab.dictionary')),
                        ('dictionary_version', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='index_versions', to='vocab.dictionaryversion')),
                        ('encoder', models.ForeignKey(blank=True, help_text='Empty: sparse (tf-idf) retrieval only.', null=True, on_delete=django.db.models.deletion.PROTECT, related_name='index_versions', to='linking.encodermodel')),
                        ('first_stage', models.ForeignKey(blank=True, help_text="A fast BNE/DAN encoder searched first: the transformer then encodes only mentions that are not a dictionary name (RetrievalConfig.cascade='exact'). Empty: the transformer encodes every mention.", null=True, on_delete=django.db.models.deletion.PROTECT, related_name='first_stage_of', to='linking.encodermodel')),
                    ],
                    options={
                        'db_table': 'training_indexversion',
                        'ordering': ['-created_at'],
                        'constraints': [models.UniqueConstraint(condition=models.Q(('state', 'active')), fields=('dictionary',), name='one_active_index_per_dictionary')],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
