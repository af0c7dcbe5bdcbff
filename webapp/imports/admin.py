from django.contrib import admin

from webapp.imports.models import ImportJob


@admin.register(ImportJob)
class ImportJobAdmin(admin.ModelAdmin):
    list_display = ["id", "import_kind", "path", "state", "progress", "progress_total", "created_by", "created_at", "finished_at"]
    list_filter = ["import_kind", "state"]
    search_fields = ["path", "error"]
    readonly_fields = ["state", "progress", "progress_total", "error", "note", "report", "worker", "created_at", "started_at", "finished_at"]
    raw_id_fields = ["created_by"]
