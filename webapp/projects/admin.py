from django.contrib import admin

from webapp.projects.models import Adjudication, Assignment, Member, Project, Workspace


class MemberInline(admin.TabularInline):
    model = Member
    extra = 0
    raw_id_fields = ("user", "added_by")


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ("slug", "title", "collection", "annotators_per_document", "created_at")
    search_fields = ("slug", "title")
    raw_id_fields = ("collection", "created_by")
    filter_horizontal = ("concept_types",)
    exclude = ("documents",)  # thousands of rows: set on the project's own page
    inlines = [MemberInline]


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ("project", "document", "annotator", "state", "assigned_at", "done_at")
    list_filter = ("state", "project")
    search_fields = ("document__external_id", "annotator__username")
    raw_id_fields = ("document", "copy", "annotator", "assigned_by")


@admin.register(Adjudication)
class AdjudicationAdmin(admin.ModelAdmin):
    list_display = ("project", "document", "start", "end", "label", "state", "chosen_annotator", "adjudicator", "created_at")
    list_filter = ("state", "project")
    raw_id_fields = ("document", "mention", "decision", "adjudicator", "chosen_annotator")


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin):
    list_display = ("project", "annotator", "collection")
    raw_id_fields = ("collection", "annotator")
