"""The audit log, read-only, for admins: ``GET /api/audit/`` (newest first, paginated; the audit page's filters:
actor, action, object_type, object_id, date_from, date_to) and ``GET /api/audit/<id>/``. Nothing writes it here:
every write of the workbench records its own event (webapp.audit)."""

from __future__ import annotations

from typing import Any

import django_filters
from django.db.models import QuerySet
from rest_framework import mixins, serializers, viewsets

from webapp.api.filters import StrictFilterSet
from webapp.api.permissions import IsAdmin
from webapp.api.views import RejectNulMixin
from webapp.audit.export import FIELDS
from webapp.audit.models import AuditEvent
from webapp.audit.query import SYSTEM, AuditFilter, events


class AuditEventSerializer(serializers.ModelSerializer):
    actor_id = serializers.IntegerField(read_only=True, allow_null=True,
                                        help_text="The actor's account (null: the system, or an account deleted since).")

    class Meta:
        model = AuditEvent
        fields = list(FIELDS)
        read_only_fields = fields


class AuditEventFilter(StrictFilterSet):
    actor = django_filters.CharFilter(help_text=f"A username (any case), or '{SYSTEM}' for events no person made.")
    action = django_filters.CharFilter(help_text="An action (decision.made), or a kind of them (decision).")
    object_type = django_filters.CharFilter(help_text="decision, importjob, trainingrun, indexversion, project, ...")
    object_id = django_filters.CharFilter()
    date_from = django_filters.DateFilter(help_text="From this day (inclusive), YYYY-MM-DD.")
    date_to = django_filters.DateFilter(help_text="To this day (inclusive), YYYY-MM-DD.")

    class Meta:
        model = AuditEvent
        fields: list[str] = []

    def filter_queryset(self, queryset: QuerySet[Any]) -> QuerySet[Any]:
        # The page's rules (webapp.audit.query), not one per field: the API and the page filter alike.
        return events(AuditFilter.of(self.form.cleaned_data), queryset)


class AuditEventViewSet(RejectNulMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """The audit log, newest first (admins)."""

    permission_classes = [IsAdmin]
    serializer_class = AuditEventSerializer
    filterset_class = AuditEventFilter
    queryset = AuditEvent.objects.order_by("-at", "-pk")
