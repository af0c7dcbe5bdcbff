"""Django admin for collections, documents, mentions and links.

Links point to concepts (80K+ rows per dictionary release) and mentions to documents, so those foreign keys
are raw ids; change lists join what they display and skip the unfiltered COUNT(*). Mention spans are checked
by a database trigger, so a mistyped offset in the admin is refused with the trigger's message.
"""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest

from webapp.corpus.models import Collection, Document, Link, Mention


@admin.register(Collection)
class CollectionAdmin(admin.ModelAdmin):
    list_display = ("slug", "title", "dictionary", "detection", "has_gold", "document_count", "created_at")
    list_filter = ("has_gold", "dictionary", "detection")
    list_editable = ("detection",)  # which detectors find the mentions of documents imported without any
    list_select_related = ("dictionary",)
    search_fields = ("slug", "title")
    prepopulated_fields = {"slug": ("title",)}

    def get_queryset(self, request: HttpRequest) -> QuerySet[Collection]:
        return super().get_queryset(request).annotate(_document_count=Count("documents"))

    @admin.display(description="documents", ordering="_document_count")
    def document_count(self, obj: Collection) -> int:
        return getattr(obj, "_document_count", 0)


class MentionInline(admin.TabularInline):
    model = Mention
    fields = ("start", "end", "text", "mention_type", "status", "source", "detector", "model_version")
    extra = 0
    show_change_link = True  # links are edited on the mention's own page


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ("external_id", "short_title", "collection", "detection_state", "created_at")
    list_filter = ("collection", "detection_state")
    list_select_related = ("collection",)
    search_fields = ("=external_id", "title")
    raw_id_fields = ("collection",)
    inlines = [MentionInline]
    show_full_result_count = False

    @admin.display(description="title")
    def short_title(self, obj: Document) -> str:
        return obj.title if len(obj.title) <= 90 else obj.title[:89] + "…"


class LinkInline(admin.TabularInline):
    model = Link
    fields = ("part", "concept", "concept_ref", "nil", "origin", "score", "rank", "model_version", "created_by")
    raw_id_fields = ("concept", "created_by")
    extra = 0


@admin.register(Mention)
class MentionAdmin(admin.ModelAdmin):
    list_display = ("text", "document", "start", "end", "mention_type", "status", "source", "detector", "updated_at")
    list_filter = ("status", "source", "detector", "mention_type", "document__collection")
    list_select_related = ("document",)
    search_fields = ("text", "=document__external_id")
    raw_id_fields = ("document",)
    inlines = [LinkInline]
    show_full_result_count = False
    list_per_page = 50


@admin.register(Link)
class LinkAdmin(admin.ModelAdmin):
    list_display = ("mention", "part", "concept", "concept_ref", "nil", "origin", "score", "rank", "model_version", "created_at")
    list_filter = ("origin", "nil", "mention__document__collection")
    list_select_related = ("mention", "concept", "created_by")
    search_fields = ("=concept_ref", "=concept__concept_id", "mention__text")
    raw_id_fields = ("mention", "concept", "created_by")
    show_full_result_count = False
    list_per_page = 50
