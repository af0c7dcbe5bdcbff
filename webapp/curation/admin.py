from django.contrib import admin

from webapp.curation.models import Decision, HardNegative


@admin.register(Decision)
class DecisionAdmin(admin.ModelAdmin):
    list_display = ("created_at", "user", "action", "via", "mention_text", "concept_ref", "rank", "model_version", "time_on_task_ms", "undone_at")
    list_filter = ("action", "via", "undone_at")
    search_fields = ("mention_text", "concept_ref", "user__username")
    raw_id_fields = ("document", "mention", "concept", "synonym")


@admin.register(HardNegative)
class HardNegativeAdmin(admin.ModelAdmin):
    list_display = ("mention_text", "concept", "rank", "score", "created_at")
    raw_id_fields = ("decision", "concept")
