"""The "?" beside a page's one line (issue #46): a link to the section of the documentation site that explains the
page, so the page itself leads with its state and actions instead of printing the explanation. ``DOCS_URL`` (a
setting, docs/configuration.md) says where the site is served; tests/unit/test_docs_links.py checks that every
page and section a template names exists in docs/."""

from __future__ import annotations

from django import template
from django.conf import settings
from django.utils.html import format_html
from django.utils.safestring import SafeString

register = template.Library()


def docs_url(page: str, section: str = "") -> str:
    """The address of ``docs/<page>.md``'s ``section`` (a heading's anchor) on the built site."""
    return f"{settings.DOCS_URL.rstrip('/')}/{page}/" + (f"#{section}" if section else "")


@register.simple_tag
def docs_link(page: str, section: str = "", about: str = "this page") -> SafeString:
    """``<a class="docs-link">?</a>`` to ``docs/<page>.md#<section>``, opened beside the app."""
    label = f"About {about}, in the documentation"
    return format_html('<a class="docs-link" href="{}" target="_blank" rel="noopener" title="{}" aria-label="{}">?</a>',
                       docs_url(page, section), label, label)
