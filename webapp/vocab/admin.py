"""Django admin for dictionaries: browsing and spot fixes by admins; imports go through the importers.

A MEDIC release alone has 78K names and 20K edges, so every foreign key to a big table is a raw id (never a
select of all rows), change lists join what they display (``list_select_related``) and skip the second,
unfiltered COUNT(*) (``show_full_result_count``).
"""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Q, QuerySet
from django.http import HttpRequest

from linker.text import normalize
from webapp.vocab.models import (
    Concept,
    Dictionary,
    DictionaryVersion,
    HierarchyEdge,
    KnownType,
    KnownTypeVocabulary,
    Name,
)


class DictionaryVersionInline(admin.TabularInline):
    model = DictionaryVersion
    fields = ("release", "source_format", "concept_count", "name_count", "edge_count", "imported_at", "imported_by")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(Dictionary)
class DictionaryAdmin(admin.ModelAdmin):
    list_display = ("slug", "title", "created_at")
    search_fields = ("slug", "title")
    prepopulated_fields = {"slug": ("title",)}
    inlines = [DictionaryVersionInline]


@admin.register(DictionaryVersion)
class DictionaryVersionAdmin(admin.ModelAdmin):
    list_display = (
        "dictionary", "release", "source_format", "concept_count", "name_count", "edge_count", "imported_at", "imported_by",
    )
    list_filter = ("dictionary", "source_format")
    list_select_related = ("dictionary", "imported_by")
    search_fields = ("release", "source_name", "checksum", "dictionary__slug")
    # Counts, checksum and provenance describe the imported file: editing them would make them lie.
    readonly_fields = ("checksum", "source_format", "source_name", "concept_count", "name_count", "edge_count", "imported_at")
    raw_id_fields = ("imported_by",)
    date_hierarchy = "imported_at"


class KnownTypeInline(admin.TabularInline):
    model = KnownType
    fields = ("code", "label")
    extra = 0


@admin.register(KnownTypeVocabulary)
class KnownTypeVocabularyAdmin(admin.ModelAdmin):
    list_display = ("name", "description")
    search_fields = ("name",)
    inlines = [KnownTypeInline]


@admin.register(KnownType)
class KnownTypeAdmin(admin.ModelAdmin):
    list_display = ("label", "code", "vocabulary")
    list_filter = ("vocabulary",)
    list_select_related = ("vocabulary",)
    search_fields = ("label", "code")  # also what the concept form's autocomplete searches


class NameInline(admin.TabularInline):
    model = Name
    fields = ("text", "normalized", "source", "scope", "is_preferred", "created_by")
    readonly_fields = ("normalized",)  # always linker.text.normalize(text), written by the importers
    raw_id_fields = ("created_by",)
    extra = 0


class ParentEdgeInline(admin.TabularInline):
    model = HierarchyEdge
    fk_name = "child"
    verbose_name = "parent"
    verbose_name_plural = "parents (is_a edges from this concept)"
    fields = ("parent", "relation", "version")
    raw_id_fields = ("parent", "version")
    extra = 0


@admin.register(Concept)
class ConceptAdmin(admin.ModelAdmin):
    list_display = ("concept_id", "preferred_name", "version", "obsolete")
    list_filter = ("version__dictionary", "obsolete", "version")
    list_select_related = ("version__dictionary",)
    search_fields = ("=concept_id", "preferred_name")
    raw_id_fields = ("version",)
    autocomplete_fields = ("known_types",)
    inlines = [NameInline, ParentEdgeInline]
    show_full_result_count = False
    list_per_page = 50

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Concept], search_term: str
    ) -> tuple[QuerySet[Concept], bool]:
        # An id typed into the search box may be an alternative id ("DOID:0060395"): look in alt_ids as a
        # whole array element (GIN-indexed), which the text lookups of search_fields cannot do.
        found, may_have_duplicates = super().get_search_results(request, queryset, search_term)
        term = search_term.strip()
        if term:
            found = found | queryset.filter(alt_ids__contains=[term])
        return found, may_have_duplicates


@admin.register(Name)
class NameAdmin(admin.ModelAdmin):
    list_display = ("text", "concept", "source", "scope", "is_preferred", "created_by", "created_at")
    list_filter = ("source", "is_preferred", "scope", "concept__version__dictionary")
    list_select_related = ("concept", "created_by")
    search_fields = ("normalized",)  # shows the search box; the lookup itself is get_search_results below
    search_help_text = "Part of a name (compared normalised, as the linker does) or an exact concept id."
    readonly_fields = ("normalized",)
    raw_id_fields = ("concept", "created_by")
    ordering = ("-pk",)  # newest first (curator synonyms), and an index scan instead of sorting every name
    show_full_result_count = False
    list_per_page = 50

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Name], search_term: str
    ) -> tuple[QuerySet[Name], bool]:
        # The normalised column with the normalised query: the trigram index serves LIKE '%q%' there, and
        # "Diabetes-Mellitus" finds "diabetes mellitus" as the linker would; an ILIKE on the raw text would
        # scan every name. The concept id goes through a subquery, not a join, so the planner can still use
        # the name indexes (a join ORed with the LIKE made it scan both tables).
        term = search_term.strip()
        if not term:
            return queryset, False
        condition = Q(concept__in=Concept.objects.filter(concept_id=term).values("pk"))
        query = normalize(term)
        if query:
            condition |= Q(normalized__contains=query)
        return queryset.filter(condition), False


@admin.register(HierarchyEdge)
class HierarchyEdgeAdmin(admin.ModelAdmin):
    list_display = ("child", "relation", "parent", "version")
    list_filter = ("relation", "version__dictionary")
    list_select_related = ("child", "parent", "version__dictionary")
    search_fields = ("=child__concept_id", "=parent__concept_id")
    raw_id_fields = ("version", "child", "parent")
    show_full_result_count = False
    list_per_page = 50
