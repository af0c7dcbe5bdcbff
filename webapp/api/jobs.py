"""Every kind of background work as one resource, for admins and pipelines: ``GET /api/jobs/`` (filter by kind,
state, parent), ``GET /api/jobs/<id>/`` (progress, error, result; ``url`` points at the kind's own resource or page),
and ``POST /api/jobs/<id>/cancel/`` (a queued job at once, a running training run or index build at its next
report; 409 naming why when it cannot be)."""

from __future__ import annotations

from typing import Any

import django_filters
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.api.filters import StrictFilterSet
from webapp.api.permissions import IsAdmin
from webapp.api.schema import ErrorSerializer
from webapp.api.views import RejectNulMixin
from webapp.jobs import services
from webapp.jobs.models import Job


class JobSerializer(serializers.ModelSerializer):
    label = serializers.SerializerMethodField(help_text="The kind in words: 'Training run'.")
    subject = serializers.SerializerMethodField(help_text="What it works on, in a few words.")
    url = serializers.SerializerMethodField(help_text="The page that shows it in the browser.")
    percent = serializers.IntegerField(read_only=True, allow_null=True, help_text="Progress in percent, where known.")
    cancellable = serializers.SerializerMethodField(help_text="Whether POST .../cancel/ would cancel it now.")
    rate = serializers.FloatField(read_only=True, allow_null=True,
                                  help_text="Units done per second since it started; null before any progress.")
    seconds_left = serializers.FloatField(read_only=True, allow_null=True,
                                          help_text="A running job's time left at its pace so far; null where unknown.")
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)

    class Meta:
        model = Job
        fields = ["id", "kind", "label", "subject", "url", "state", "progress", "progress_total", "percent",
                  "rate", "seconds_left", "progress_note", "error", "note", "result", "cancel_requested", "cancellable",
                  "attempts", "worker",
                  "task_id", "heartbeat_at", "parent", "created_by", "created_at", "started_at", "finished_at"]
        read_only_fields = fields

    def _view(self, job: Job) -> services.JobView:
        cache = self.context.setdefault("job_views", {})
        if job.pk not in cache:
            cache[job.pk] = services.describe(job)
        return cache[job.pk]  # type: ignore[no-any-return]

    def get_label(self, job: Job) -> str:
        return self._view(job).label

    def get_subject(self, job: Job) -> str:
        return self._view(job).subject

    def get_url(self, job: Job) -> str:
        return self._view(job).url

    def get_cancellable(self, job: Job) -> bool:
        return self._view(job).cancellable


class JobFilter(StrictFilterSet):
    kind = django_filters.ChoiceFilter(choices=services.kind_choices, help_text="import, training, evaluation, ...")
    state = django_filters.ChoiceFilter(choices=Job.State.choices)
    parent = django_filters.NumberFilter(field_name="parent_id", help_text="The chunks of this job.")

    class Meta:
        model = Job
        fields = ["kind", "state", "parent"]


class JobViewSet(RejectNulMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Background jobs of every kind, newest first (admins)."""

    permission_classes = [IsAdmin]
    serializer_class = JobSerializer
    filterset_class = JobFilter
    queryset = Job.objects.select_related("created_by").order_by("-created_at", "-id")

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        # The kinds' rows of the whole page read at once (one query per kind), not one by one per job.
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        assert page is not None  # the project's pagination is always on
        context = self.get_serializer_context() | {"job_views": services.describe_all(page)}
        return self.get_paginated_response(JobSerializer(page, many=True, context=context).data)

    @extend_schema(request=None, responses={200: JobSerializer, 409: ErrorSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: Any = None) -> Response:
        job = self.get_object()
        try:
            job = services.cancel(job, request.user)
        except services.CannotCancel as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(JobSerializer(job, context=self.get_serializer_context()).data)
