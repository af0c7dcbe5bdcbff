from django.contrib import admin

from webapp.core.models import ImportJob


@admin.register(ImportJob)
class ImportJobAdmin(admin.ModelAdmin):
    list_display = ["id", "kind", "path", "state", "progress", "progress_total", "created_by", "created_at", "finished_at"]
    list_filter = ["kind", "state"]
    search_fields = ["path", "message"]
    readonly_fields = ["state", "progress", "progress_total", "message", "report", "worker", "created_at", "started_at", "finished_at"]
    raw_id_fields = ["created_by"]
