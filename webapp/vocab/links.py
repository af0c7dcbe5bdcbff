"""URLs of vocabulary pages, shared by views and templates (``{% load vocab_links %}``)."""

from __future__ import annotations

from django.urls import reverse

from webapp.vocab.models import Concept


def concept_url(concept: Concept) -> str:
    """The concept's page in its own dictionary version (select ``version__dictionary`` with the concept)."""
    version = concept.version
    return f"{reverse('vocab:concept', args=[version.dictionary.slug, concept.concept_id])}?version={version.pk}"
