"""The API's documentation pages (ReDoc and Swagger UI) render from the workbench alone: Chromium records every
request the pages make, and none goes to another host (no Google fonts, no CDN script), as the product promises.
A request to another host is answered with an abort, so a regression fails here at once, not after a timeout."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from tests.conftest import PASSWORD
from tests.e2e.conftest import login

LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1"}


def leaves_the_host(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("http", "https", "ws", "wss") and parts.hostname not in LOCAL_HOSTS


@pytest.mark.parametrize(
    ("path", "rendered"),
    [
        ("/api/redoc/", "#redoc-container h1:has-text('Entity-linking workbench API')"),
        ("/api/docs/", ".swagger-ui .info .title:has-text('Entity-linking workbench API')"),
    ],
)
def test_the_api_docs_make_no_request_to_another_host(  # type: ignore[no-untyped-def]
    live_server, browser, transactional_db, alice, screenshots, path: str, rendered: str
) -> None:
    from django.db import connections

    connections.settings["default"]["CONN_MAX_AGE"] = 0  # live-server threads close their connections
    page = login(browser, live_server.url, "alice", PASSWORD)
    sent: list[str] = []  # what reached the network layer
    blocked: list[str] = []  # what the page asked for and the browser refused by the page's Content-Security-Policy

    def record(route, request) -> None:  # type: ignore[no-untyped-def]
        sent.append(request.url)
        route.abort() if leaves_the_host(request.url) else route.continue_()

    page.context.route("**/*", record)
    page.on("requestfailed", lambda request: blocked.append(request.url) if request.failure == "csp" else None)
    page.goto(f"{live_server.url}{path}")
    page.wait_for_selector(rendered, timeout=90_000)  # the schema of every endpoint is generated on first request
    page.wait_for_load_state("networkidle")
    page.screenshot(path=str(screenshots / f"api-docs-{path.strip('/').replace('/', '-')}.png"))

    assert [url for url in sent if leaves_the_host(url)] == []
    assert any(urlsplit(url).path == "/api/schema/" for url in sent), sent
    assert any("/static/drf_spectacular_sidecar/" in url for url in sent), sent
    # ReDoc's bundle asks for its "API docs by Redocly" logo on cdn.redoc.ly whatever its options: refused unsent.
    assert all(leaves_the_host(url) for url in blocked), blocked
