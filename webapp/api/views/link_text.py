"""POST /api/link: mentions of a text with ranked candidates, by the dictionary's active index."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import AnonRateThrottle, ScopedRateThrottle, UserRateThrottle

from webapp.api.link_serializers import LinkRequestSerializer, LinkResponseSerializer
from webapp.api.linking import GivenSpan, link_text
from webapp.api.permissions import IsCuratorForAll
from webapp.api.views.common import RejectNulMixin
from webapp.linking.registry import get_active_linker
from webapp.vocab.models import Dictionary


class LinkTextView(RejectNulMixin, GenericAPIView):
    """Mentions of a text with ranked candidates, by the dictionary's active index."""

    permission_classes = [IsCuratorForAll]
    throttle_classes = [AnonRateThrottle, UserRateThrottle, ScopedRateThrottle]
    throttle_scope = "link"
    serializer_class = LinkRequestSerializer

    @extend_schema(
        request=LinkRequestSerializer,
        responses={200: LinkResponseSerializer, 400: OpenApiTypes.OBJECT, 503: OpenApiTypes.OBJECT},
        description="Give mentions as spans of the text, or leave them out to find them with the dictionary "
        "matcher. 503 when the dictionary has no active index.",
    )
    def post(self, request: Request) -> Response:
        data = LinkRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        if not Dictionary.objects.filter(slug=v["dictionary"]).exists():
            raise ValidationError({"dictionary": [f"no dictionary {v['dictionary']!r}"]})
        try:
            active = get_active_linker(v["dictionary"])
        except (OSError, ValueError) as exc:
            return Response({"detail": f"the active index of {v['dictionary']} cannot be loaded: {exc}"}, status=status.HTTP_503_SERVICE_UNAVAILABLE)
        if active is None:
            return Response(
                {"detail": f"dictionary {v['dictionary']} has no active index; an admin builds one with "
                 f"'manage.py build_index --dictionary {v['dictionary']} --activate'"},
                status=status.HTTP_503_SERVICE_UNAVAILABLE,
            )
        spans = [GivenSpan(m["start"], m["end"], m["mention_type"]) for m in v["mentions"]] if "mentions" in v else None
        return Response(link_text(active, v["text"], spans, v["k"], types=v["types"]))
