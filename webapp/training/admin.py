from django.contrib import admin

from webapp.training.models import EncoderModel, IndexVersion


@admin.register(EncoderModel)
class EncoderModelAdmin(admin.ModelAdmin):
    list_display = ["name", "method", "base_model", "parent", "created_at"]
    list_filter = ["method"]
    search_fields = ["name", "base_model", "artifact_path"]
    raw_id_fields = ["parent", "created_by"]


@admin.register(IndexVersion)
class IndexVersionAdmin(admin.ModelAdmin):
    list_display = ["id", "dictionary", "dictionary_version", "encoder", "state", "name_count", "build_seconds", "created_at", "activated_at"]
    list_filter = ["state", "dictionary"]
    raw_id_fields = ["dictionary_version", "encoder", "created_by"]
    # Activation goes through the service (one atomic switch); the admin shows state, it does not edit it.
    readonly_fields = ["state", "activated_at", "retired_at", "error", "build_seconds"]
