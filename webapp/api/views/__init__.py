"""The REST API: dictionaries, concept search, collections, documents, mentions, links, decisions,
POST /api/link, queued imports, and import / export in the interchange formats.

Anonymous requests get 401 (token or session authentication is required); curators read, decide and link;
admins import. Views validate with an input serializer and call a service (webapp.corpus.formats.services,
webapp.curation.services.decisions, webapp.api.linking); they hold no workflow of their own. One module per
resource; this package names the views for the URLconf.
"""

from __future__ import annotations

from webapp.api.views.common import NotFoundView, Pagination, RejectNulMixin
from webapp.api.views.documents import CollectionViewSet, DocumentViewSet
from webapp.api.views.imports import DictionaryUploadView, ImportJobViewSet
from webapp.api.views.link_text import LinkTextView
from webapp.api.views.mentions import LinkViewSet, MentionViewSet
from webapp.api.views.vocab import ConceptViewSet, DictionaryViewSet

__all__ = [
    "CollectionViewSet",
    "ConceptViewSet",
    "DictionaryUploadView",
    "DictionaryViewSet",
    "DocumentViewSet",
    "ImportJobViewSet",
    "LinkTextView",
    "LinkViewSet",
    "MentionViewSet",
    "NotFoundView",
    "Pagination",
    "RejectNulMixin",
]
