"""Named API tokens: issue one (the key is shown once), revoke one, and check a key a request brings.

A key is ``elw_`` and 40 random URL-safe characters; the database keeps its SHA-256 and its first characters.
Keys of DRF's single token per user, from before named tokens, were moved here by migration 0002 (same key, no
expiry, named "Token from before named tokens"), so the pipelines that hold them keep working.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from webapp.audit import actions
from webapp.audit.events import record
from webapp.core.roles import is_admin
from webapp.people.models import ApiToken
from webapp.projects.access import can_view_project
from webapp.projects.models import Project

KEY_START = "elw_"
PREFIX_CHARS = 12  # "elw_" and 8 more: enough to tell a user's tokens apart, far too few to guess the rest
# Writing last_used_at on every request would be a write per API call; a minute is precise enough to see
# which tokens are in use.
LAST_USED_EVERY = timedelta(minutes=1)
_DEFAULT = object()


class TokenError(ValueError):
    """A token that cannot be issued or revoked, with the reason in words."""


class TokenRefused(Exception):
    """A key that does not authenticate: unknown, revoked, expired, or its user deactivated (a 401)."""


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def default_expiry() -> datetime | None:
    """When a token issued now expires unless its maker says otherwise (settings.API_TOKEN_DAYS; 0: never)."""
    days = int(getattr(settings, "API_TOKEN_DAYS", 90))
    return timezone.now() + timedelta(days=days) if days > 0 else None


def _account(token: ApiToken) -> dict[str, Any]:
    """What the audit event says of the token (never the key)."""
    return {"name": token.name, "prefix": token.prefix, "user": token.user.get_username(), "read_only": token.read_only,
            "project": token.project.slug if token.project_id else None,
            "expires_at": token.expires_at.isoformat() if token.expires_at else None}


@dataclass(frozen=True)
class Issued:
    token: ApiToken
    key: str  # shown once, never stored


def issue_token(user: Any, name: str, *, expires_at: Any = _DEFAULT, read_only: bool = False,
                project: Project | None = None, request: Any = None) -> Issued:
    """A new token for ``user``; its key is in the answer and nowhere else."""
    name = name.strip()
    if not name:
        raise TokenError("a token needs a name saying what it is for")
    if not user.is_active:
        raise TokenError(f"{user.get_username()}'s account is deactivated")
    if project is not None and not can_view_project(user, project):
        raise TokenError(f"{user.get_username()} is not a member of project “{project}”, so a token cannot be "
                         "scoped to it")
    expiry = default_expiry() if expires_at is _DEFAULT else expires_at
    if expiry is not None and expiry <= timezone.now():
        raise TokenError("the expiry date is in the past")
    key = KEY_START + secrets.token_urlsafe(30)
    with transaction.atomic():
        token = ApiToken.objects.create(user=user, name=name[:100], key_hash=hash_key(key), prefix=key[:PREFIX_CHARS],
                                        expires_at=expiry, read_only=read_only, project=project)
        # The maker: the signed-in user of the page, or the owner (POST /api/auth/token/ has no signed-in user).
        maker = getattr(request, "user", None)
        record(actions.TOKEN_CREATED, obj=token, label=f"{token.name} ({token.prefix}…)", after=_account(token),
               request=request, actor=maker if getattr(maker, "is_authenticated", False) else user)
    return Issued(token, key)


def revoke_token(token: ApiToken, *, by: Any, request: Any = None) -> ApiToken:
    """Revoke the token at once: its next request gets 401."""
    if not (by.pk == token.user_id or is_admin(by)):
        raise TokenError("only the token's owner or an admin may revoke it")
    with transaction.atomic():
        locked = ApiToken.objects.select_for_update(of=("self",)).select_related("user", "project").get(pk=token.pk)
        if locked.revoked_at is not None:
            raise TokenError(f"the token {locked.name} ({locked.prefix}…) was revoked already")
        locked.revoked_at, locked.revoked_by = timezone.now(), by
        locked.save(update_fields=["revoked_at", "revoked_by"])
        record(actions.TOKEN_REVOKED, actor=by, obj=locked, label=f"{locked.name} ({locked.prefix}…)",
               before={"state": "active"}, after={"state": "revoked", **_account(locked)}, request=request)
    return locked


def authenticate_key(key: str) -> ApiToken:
    """The token the key belongs to, if it may be used now; else TokenRefused saying why."""
    token = (ApiToken.objects.select_related("user", "project").filter(key_hash=hash_key(key)).first())
    if token is None:
        raise TokenRefused("Invalid token.")
    if token.revoked_at is not None:
        raise TokenRefused(f"This token ({token.prefix}…) was revoked on {token.revoked_at:%Y-%m-%d %H:%M} UTC.")
    if token.is_expired:
        raise TokenRefused(f"This token ({token.prefix}…) expired on {token.expires_at:%Y-%m-%d %H:%M} UTC; "
                           "make a new one on the API tokens page.")
    if not token.user.is_active:
        raise TokenRefused("User inactive or deleted.")
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_EVERY:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


def tokens_for(viewer: Any) -> QuerySet[ApiToken]:
    """The tokens a user sees on the tokens page: their own, or every user's for an admin."""
    tokens = ApiToken.objects.select_related("user", "project", "revoked_by")
    return tokens if is_admin(viewer) else tokens.filter(user=viewer)
