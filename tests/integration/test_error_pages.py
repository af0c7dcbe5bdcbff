"""The error pages (issue #46): 404 and 403 keep the site's navigation and say what happened and where to go; the
500 page renders with no request, user or database."""

from __future__ import annotations

from django.template.loader import render_to_string
from django.test import RequestFactory
from django.views.defaults import server_error


def test_404_has_the_navigation_and_a_way_home(bob_client) -> None:  # type: ignore[no-untyped-def]
    response = bob_client.get("/no-such-page/")
    assert response.status_code == 404
    html = response.content.decode()
    assert 'class="mainnav"' in html and "Page not found" in html
    assert "/no-such-page/" in html and 'href="/"' in html


def test_404_of_a_missing_object_too(alice_client) -> None:  # type: ignore[no-untyped-def]
    response = alice_client.get("/training/runs/999999/")
    assert response.status_code == 404
    assert 'class="mainnav"' in response.content.decode()


def test_403_keeps_the_refusal_and_the_navigation(bob_client) -> None:  # type: ignore[no-untyped-def]
    response = bob_client.get("/training/")
    assert response.status_code == 403
    html = response.content.decode()
    assert 'class="mainnav"' in html and 'id="refusal"' in html and 'href="/"' in html
    refusal = html.split('id="refusal">', 1)[1].split("</p>", 1)[0]
    assert refusal.strip(), "the 403 page says why"


def test_500_renders_without_a_request_context() -> None:
    html = render_to_string("500.html")
    assert "Something went wrong on the server" in html and 'href="/"' in html and "{#" not in html
    response = server_error(RequestFactory().get("/"))
    assert response.status_code == 500 and b"Go to the dashboard" in response.content
