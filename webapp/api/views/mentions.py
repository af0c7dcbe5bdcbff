"""Mentions, links and decisions: ``POST /api/mentions/{id}/decision/`` goes through the curation decision service."""

from __future__ import annotations

from django.db.models import Prefetch, QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.api.filters import LinkFilter, MentionFilter
from webapp.api.permissions import IsCurator, IsCuratorForAll
from webapp.api.serializers import (
    ConflictSerializer,
    DecisionInputSerializer,
    LinkSerializer,
    MentionSerializer,
)
from webapp.api.views.common import (
    Pagination,
    RejectNulMixin,
)
from webapp.corpus.importers import id_variants
from webapp.corpus.models import Link, Mention
from webapp.curation.models import Decision
from webapp.curation.services.decisions import Conflict, decide
from webapp.curation.services.errors import CurationError
from webapp.projects import access
from webapp.vocab.models import Concept, Dictionary
from webapp.vocab.selectors import first_by_id

# The mention's own columns that MentionSerializer shows, "document" (its id) among them.
MENTION_FIELDS = [f for f in MentionSerializer.Meta.fields if f not in ("document_external_id", "collection", "links")]


class MentionViewSet(RejectNulMixin, viewsets.ReadOnlyModelViewSet):
    """Mentions with their links; ``POST /api/mentions/{id}/decision/`` records a curator's decision."""

    permission_classes = [IsCurator]
    pagination_class = Pagination
    serializer_class = MentionSerializer
    filterset_class = MentionFilter

    def get_queryset(self) -> QuerySet[Mention]:
        links = Link.objects.select_related("concept", "created_by").order_by("part", "id")
        return (
            # The one rule (webapp.projects.access.scope): an annotator reads and decides on their workspace's
            # copies here as on the curation screen; admins and the project's adjudicators read them too.
            access.scope(Mention.objects.all(), self.request.user)
            .select_related("document__collection")
            # Of the document, only what a mention shows: selecting the whole row read a 9.5M-character text once
            # per mention, and a page of 500 mentions of one long document grew a worker by 9 GB.
            .only(*MENTION_FIELDS, "document__external_id", "document__collection__slug")
            .prefetch_related(Prefetch("links", queryset=links))
            .order_by("document_id", "start", "end", "id")
        )

    @extend_schema(
        request=DecisionInputSerializer,
        responses={200: MentionSerializer, 400: OpenApiTypes.OBJECT, 409: ConflictSerializer},
        description="accept (the best suggestion, or the concept given), relink (concept_id), nil, or reject. "
        "Send the mention's updated_at as you read it: if it changed since, nothing is recorded and the "
        "answer is 409 with the current mention.",
    )
    @action(detail=True, methods=["post"], permission_classes=[IsCuratorForAll], serializer_class=DecisionInputSerializer)
    def decision(self, request: Request, pk: str | None = None) -> Response:
        mention = self.get_object()
        access.check_decide_document(request.user, mention.document)
        data = DecisionInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        concept = _decision_concept(mention, v["concept_id"], v.get("dictionary")) if v["concept_id"] else None
        try:
            # The same service as the curation screen: logged, undoable, hard negatives, live index updated.
            decide(
                user=request.user, mention_id=mention.pk, action=v["action"], seen_updated_at=v["updated_at"],
                concept=concept, part=v["part"], via=Decision.Via.API, time_on_task_ms=v.get("time_on_task_ms"),
                scope=v["scope"], teach=v["teach"],
            )
        except Conflict as exc:
            current = self.get_queryset().get(pk=mention.pk)
            return Response({"detail": str(exc), "current": MentionSerializer(current).data}, status=status.HTTP_409_CONFLICT)
        except CurationError as exc:
            raise ValidationError({"detail": str(exc)}) from exc
        return Response(MentionSerializer(self.get_queryset().get(pk=mention.pk)).data)


def _decision_concept(mention: Mention, concept_id: str, dictionary_slug: str | None) -> Concept:
    """The concept a curator named: one the mention's links already point to, else the dictionary's latest release."""
    variants = id_variants(concept_id)
    linked = Concept.objects.filter(links__mention=mention, concept_id__in=variants).order_by("-version_id").first()
    if linked is not None:
        return linked
    slug = dictionary_slug or (mention.document.collection.dictionary.slug if mention.document.collection.dictionary else None)
    if not slug:
        raise ValidationError({"dictionary": ["the collection has no dictionary: name the concept's dictionary"]})
    dictionary = Dictionary.objects.filter(slug=slug).first()
    version = dictionary.latest_version() if dictionary else None
    if version is None:
        raise ValidationError({"dictionary": [f"no imported dictionary {slug!r}"]})
    concept = (
        Concept.objects.filter(version=version, concept_id__in=variants).first()
        or first_by_id(Concept.objects.filter(version=version, alt_ids__overlap=variants))
    )
    if concept is None:
        raise ValidationError({"concept_id": [f"no concept {concept_id!r} in {slug} release {version.release}"]})
    return concept


class LinkViewSet(RejectNulMixin, viewsets.ReadOnlyModelViewSet):
    """Links of every origin (gold, model suggestions, curator decisions), filterable."""

    permission_classes = [IsCurator]
    pagination_class = Pagination
    serializer_class = LinkSerializer
    filterset_class = LinkFilter

    def get_queryset(self) -> QuerySet[Link]:
        return access.scope(Link.objects.all(), self.request.user).select_related("concept", "created_by").order_by("id")
