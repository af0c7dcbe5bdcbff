"""``Authorization: Token <key>`` with named tokens (webapp.people.tokens).

- an unknown, revoked or expired key, or one whose user is deactivated: 401, saying which;
- a read-only token on POST, PUT, PATCH or DELETE: 403;
- a project-scoped token: the token is ``request.auth``, and the API's lists and lookups keep to its project
  (webapp.api.scope), so anything outside it is a 404; endpoints that are no project's (imports, training, jobs,
  creating collections) are 403 to it, and it writes only decisions and ``POST /api/link``.

Keys of DRF's former one-token-per-user were moved into named tokens (webapp/people/migrations/0002), so they keep
working. Models are imported inside the methods: DRF imports this module while its own views are still loading.
"""

from __future__ import annotations

from typing import Any

from rest_framework import authentication, exceptions
from rest_framework.permissions import SAFE_METHODS

READ_ONLY_REFUSAL = "This token is read-only: it may GET, but not POST, PUT, PATCH or DELETE."

# What a project-scoped token reaches: its project's collections, documents, mentions and links (webapp.api.scope
# narrows them), the dictionaries and concepts they link to, and the API's reference pages. It writes only decisions
# and POST /api/link: creating collections or documents, imports, training and the rest are not one project's.
SCOPED_READS = ("/api/collections/", "/api/documents/", "/api/mentions/", "/api/links/", "/api/dictionaries/",
                "/api/concepts/", "/api/link", "/api/schema/", "/api/docs/", "/api/redoc/")
SCOPED_WRITES = ("/api/mentions/", "/api/link")


def scope_refusal(token: Any, method: str, path: str) -> str | None:
    """Why the token may not make this request, or None when it may."""
    if token.read_only and method not in SAFE_METHODS:
        return READ_ONLY_REFUSAL
    if not token.project_id or path == "/api/":
        return None
    allowed = SCOPED_READS if method in SAFE_METHODS else SCOPED_WRITES
    if path.startswith(allowed):
        return None
    return (f"This token is kept to project “{token.project.slug}”: it reaches the project's collections, documents, "
            f"mentions and links (and writes decisions), not {method} {path}.")


class TokenAuthentication(authentication.TokenAuthentication):
    def authenticate(self, request: Any) -> tuple[Any, Any] | None:
        found = super().authenticate(request)
        refusal = found and scope_refusal(found[1], request.method, request.path)
        if refusal:
            raise exceptions.PermissionDenied(refusal)
        return found

    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:
        from webapp.people.tokens import TokenRefused, authenticate_key

        # PostgreSQL cannot even compare a key with a NUL character in it; it is no key of ours either.
        if "\x00" in key:
            raise exceptions.AuthenticationFailed("Invalid token.")
        try:
            token = authenticate_key(key)
        except TokenRefused as exc:
            raise exceptions.AuthenticationFailed(str(exc)) from None
        return token.user, token
