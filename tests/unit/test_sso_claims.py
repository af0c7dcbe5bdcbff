"""What the provider's claims map to (webapp.sso.claims): the username, the workbench role, the project memberships
and the e-mail domains let in. Pure functions: no provider, no database."""

from __future__ import annotations

import pytest

from webapp.sso.claims import (
    ClaimsRefused,
    Mapping,
    check_email_domain,
    claim_values,
    project_roles,
    role,
    username,
)
from webapp.sso.provider import same_issuer

MAPPING = Mapping(
    roles_claim="groups",
    role_values=(("admin", ("wb-admins",)), ("curator", ("wb-curators", "annotators")), ("viewer", ("wb-readers",))),
    projects_claim="groups",
)


def test_the_highest_role_named_by_the_claim_wins() -> None:
    assert role({"groups": ["staff", "wb-curators", "wb-admins"]}, MAPPING) == "admin"
    assert role({"groups": ["annotators"]}, MAPPING) == "curator"
    assert role({"groups": ["wb-readers"]}, MAPPING) == "viewer"


def test_no_mapped_value_gives_the_default_role_or_none() -> None:
    assert role({"groups": ["staff"]}, MAPPING) == ""
    assert role({}, MAPPING) == ""
    assert role({"groups": ["staff"]}, Mapping(roles_claim="groups", default_role="viewer")) == "viewer"


def test_a_claim_is_a_list_a_string_or_a_nested_object() -> None:
    assert claim_values({"roles": "wb-admins other"}, "roles") == ["wb-admins", "other"]
    assert claim_values({"realm_access": {"roles": ["wb-curators"]}}, "realm_access.roles") == ["wb-curators"]
    assert claim_values({"groups": None}, "groups") == []
    keycloak = Mapping(roles_claim="realm_access.roles", role_values=(("curator", ("wb-curators",)),))
    assert role({"realm_access": {"roles": ["offline_access", "wb-curators"]}}, keycloak) == "curator"


def test_project_values_name_a_project_and_a_member_role() -> None:
    claims = {"groups": ["wb-curators", "project:ncbi-disease:annotator", "project:bc5cdr:manager",
                         "project:bad slug:annotator", "project:ncbi-disease:owner", "project:x"]}
    assert project_roles(claims, MAPPING) == {("ncbi-disease", "annotator"), ("bc5cdr", "manager")}
    assert project_roles(claims, Mapping(roles_claim="groups")) == set()  # no projects claim configured


def test_the_username_is_the_configured_claim_then_the_email_then_sub() -> None:
    assert username({"preferred_username": "grace", "email": "g@example.org", "sub": "1"}, MAPPING) == "grace"
    assert username({"email": "g@example.org", "sub": "1"}, MAPPING) == "g@example.org"
    assert username({"preferred_username": "grace", "email": "g@example.org"}, Mapping(username_claim="email")) == "g@example.org"
    assert username({"sub": "0a1b"}, MAPPING) == "0a1b"
    with pytest.raises(ClaimsRefused, match="no username"):
        username({}, MAPPING)


def test_allowed_domains_let_in_only_a_verified_address_of_theirs() -> None:
    mapping = Mapping(allowed_email_domains=("example.org",))
    check_email_domain({"email": "grace@Example.org", "email_verified": True}, mapping)
    check_email_domain({"email": "anyone@elsewhere.com"}, Mapping())  # no domains configured: anyone
    with pytest.raises(ClaimsRefused, match="not of an allowed domain"):
        check_email_domain({"email": "mallory@elsewhere.com", "email_verified": True}, mapping)
    with pytest.raises(ClaimsRefused, match="not verified"):
        check_email_domain({"email": "grace@example.org", "email_verified": False}, mapping)
    with pytest.raises(ClaimsRefused, match=r"\(none\)"):
        check_email_domain({}, mapping)


def test_an_id_token_must_name_the_configured_issuer() -> None:
    assert same_issuer("https://id.example.org/realms/lab/", "https://id.example.org/realms/lab")
    assert not same_issuer("https://id.example.org/realms/other", "https://id.example.org/realms/lab")
    assert same_issuer("accounts.google.com", "https://accounts.google.com")  # Google's documented short form
    assert not same_issuer("accounts.google.com", "https://id.example.org")
