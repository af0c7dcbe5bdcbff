"""Every answer says its server time in a ``Server-Timing`` header (``app;dur=<ms>``, webapp.core.metrics): a
browser's resource timing splits a request's wait into the server's part and the rest (bench/curator_speed.py)."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.django_db


def test_a_page_and_a_panel_say_their_server_time(bob_client, demo) -> None:  # type: ignore[no-untyped-def]
    from webapp.corpus.models import Mention

    mention = Mention.objects.get(text="Type 2 diabetes")
    for url in ("/accounts/login/", f"/curate/mentions/{mention.pk}/panel/"):
        response = bob_client.get(url)
        found = re.fullmatch(r"app;dur=(\d+\.\d)", response.get("Server-Timing", ""))
        assert found and float(found.group(1)) > 0, (url, response.get("Server-Timing"))
