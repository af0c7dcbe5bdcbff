from django.contrib import admin

from webapp.linking.models import DetectorVersion, EncoderModel, IndexVersion
from webapp.training.models import Evaluation, TrainingExample, TrainingRun, WordVectorModel, WordVectorUpload


@admin.register(EncoderModel)
class EncoderModelAdmin(admin.ModelAdmin):
    list_display = ["name", "method", "base_model", "parent", "created_at"]
    list_filter = ["method"]
    search_fields = ["name", "base_model", "artifact_path"]
    raw_id_fields = ["parent", "created_by"]


@admin.register(WordVectorModel)
class WordVectorModelAdmin(admin.ModelAdmin):
    list_display = ["name", "source", "words", "dim", "name_coverage", "dictionary", "run", "created_at"]
    list_filter = ["source"]
    search_fields = ["name", "file_name", "artifact_path"]
    raw_id_fields = ["run", "created_by", "dictionary"]
    # A row stands for a checked folder: uploads go through the models page or the API, not the admin.
    readonly_fields = ["source", "file_name", "words", "dim", "subwords", "name_coverage", "artifact_path", "run"]


@admin.register(WordVectorUpload)
class WordVectorUploadAdmin(admin.ModelAdmin):
    list_display = ["id", "file_name", "name", "state", "size", "created_at", "finished_at"]
    list_filter = ["state"]
    readonly_fields = ["name", "file_name", "path", "size", "expected_dim", "state", "error", "word_vectors", "finished_at"]


@admin.register(IndexVersion)
class IndexVersionAdmin(admin.ModelAdmin):
    list_display = ["id", "dictionary", "dictionary_version", "encoder", "state", "name_count", "build_seconds", "created_at", "activated_at"]
    list_filter = ["state", "dictionary"]
    raw_id_fields = ["dictionary_version", "encoder", "created_by"]
    # Activation goes through the service (one atomic switch); the admin shows state, it does not edit it.
    readonly_fields = ["state", "activated_at", "retired_at", "error", "build_seconds"]


@admin.register(DetectorVersion)
class DetectorVersionAdmin(admin.ModelAdmin):
    list_display = ["id", "label", "dictionary", "state", "created_at", "activated_at", "retired_at"]
    list_filter = ["state", "dictionary"]
    raw_id_fields = ["run", "created_by", "activated_by"]
    # Activation goes through webapp.training.detectors (one atomic switch); the admin shows state, it does not edit it.
    readonly_fields = ["state", "activated_at", "activated_by", "retired_at", "metrics", "training_data", "artifact_path"]


class TrainingExampleInline(admin.TabularInline):
    model = TrainingExample
    extra = 0
    can_delete = False
    fields = ["text", "mention_text", "concept_id", "negative", "source", "decision"]
    readonly_fields = fields
    raw_id_fields = ["decision"]


@admin.register(TrainingRun)
class TrainingRunAdmin(admin.ModelAdmin):
    list_display = ["id", "dictionary", "method", "state", "phase", "epoch", "step", "total_steps", "device", "worker", "created_at", "finished_at"]
    list_filter = ["state", "method", "dictionary"]
    raw_id_fields = ["encoder", "index_version", "created_by", "eval_collection"]
    # State changes go through webapp.training.runs (start, cancel, the worker); the admin shows them.
    readonly_fields = [
        "state", "phase", "epoch", "epochs", "step", "total_steps", "fraction", "loss_history", "metrics", "log_tail",
        "device", "worker", "task_id", "error", "snapshot_at", "created_at", "started_at", "finished_at", "heartbeat_at",
    ]
    inlines = [TrainingExampleInline]


@admin.register(Evaluation)
class EvaluationAdmin(admin.ModelAdmin):
    list_display = ["id", "index_version", "collection", "state", "created_at", "finished_at"]
    list_filter = ["state"]
    raw_id_fields = ["index_version", "collection", "created_by"]
    readonly_fields = ["state", "metrics", "error", "finished_at"]
