"""Links to vocabulary pages for any template that shows a concept (documents, candidates, search hits)."""

from __future__ import annotations

from django import template

from webapp.vocab import links

register = template.Library()
register.simple_tag(links.concept_url, name="concept_url")
