"""What the provider's claims say about a user: the username, the workbench role and the project memberships.

Pure functions of the claims and a :class:`Mapping` built from the settings, so that they are tested without a
provider.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from webapp.core import roles

VIEWER: str = getattr(roles, "VIEWER", "viewer")
# Highest first: one whose claims map to several roles gets the highest.
ROLE_ORDER = (roles.ADMIN, roles.CURATOR, VIEWER)
PROJECT_ROLES = ("annotator", "adjudicator", "manager")
_PROJECT_VALUE = re.compile(r"project:(?P<slug>[-a-zA-Z0-9_]+):(?P<role>annotator|adjudicator|manager)\Z")


class ClaimsRefused(Exception):
    """The claims do not let this person in; the message says why, for the login page."""


@dataclass(frozen=True)
class Mapping:
    username_claim: str = "preferred_username"
    roles_claim: str = "groups"
    role_values: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (role, claim values that give it), highest first
    default_role: str = ""
    projects_claim: str = ""
    allowed_email_domains: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls) -> Mapping:
        return cls(
            username_claim=settings.OIDC_USERNAME_CLAIM,
            roles_claim=settings.OIDC_ROLES_CLAIM,
            role_values=(
                (roles.ADMIN, tuple(settings.OIDC_ADMIN_VALUES)),
                (roles.CURATOR, tuple(settings.OIDC_CURATOR_VALUES)),
                (VIEWER, tuple(settings.OIDC_VIEWER_VALUES)),
            ),
            default_role=settings.OIDC_DEFAULT_ROLE,
            projects_claim=settings.OIDC_PROJECTS_CLAIM,
            allowed_email_domains=tuple(settings.OIDC_ALLOWED_EMAIL_DOMAINS),
        )


def claim_values(claims: dict[str, Any], name: str) -> list[str]:
    """A claim as a list of strings: providers send a list (Keycloak's groups, Entra ID's roles), one string, or a
    space-separated string; a dotted name reaches into an object (Keycloak's ``realm_access.roles``)."""
    value: Any = claims
    for part in name.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if value is None:
        return []
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list | tuple):
        return [str(item) for item in value]
    return [str(value)]


def username(claims: dict[str, Any], mapping: Mapping) -> str:
    """The username of a user created on first sign-in: the configured claim, else the e-mail address, else ``sub``."""
    for name in (mapping.username_claim, "email", "sub"):
        value = claims.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()[:150]  # Django's username column
    raise ClaimsRefused("the identity provider sent no username, e-mail address or subject (sub) claim")


def check_email_domain(claims: dict[str, Any], mapping: Mapping) -> None:
    """With allowed domains configured, only a verified e-mail address of one of them gets in."""
    if not mapping.allowed_email_domains:
        return
    email = str(claims.get("email") or "")
    domain = email.rpartition("@")[2].lower()
    if not email or domain not in mapping.allowed_email_domains:
        raise ClaimsRefused(f"the e-mail address {email or '(none)'} is not of an allowed domain "
                            f"({', '.join(mapping.allowed_email_domains)})")
    if claims.get("email_verified") is False:
        raise ClaimsRefused(f"the identity provider has not verified the e-mail address {email}")


def role(claims: dict[str, Any], mapping: Mapping) -> str:
    """The workbench role the claims give (the highest that matches), else the default role ("" for none)."""
    values = set(claim_values(claims, mapping.roles_claim))
    for name, wanted in mapping.role_values:
        if values & set(wanted):
            return name
    return mapping.default_role


def project_roles(claims: dict[str, Any], mapping: Mapping) -> set[tuple[str, str]]:
    """The (project slug, member role) pairs named by the projects claim (``project:<slug>:<role>``); other values
    are not ours and are left out."""
    if not mapping.projects_claim:
        return set()
    pairs = set()
    for value in claim_values(claims, mapping.projects_claim):
        match = _PROJECT_VALUE.match(value)
        if match:
            pairs.add((match["slug"], match["role"]))
    return pairs
