"""What a sign-in through the provider writes (webapp.sso.sync.sign_in), given the claims the provider sent: the user
created on first sign-in, their role and project memberships brought in line with the claims at every sign-in, and
the sign-ins refused (no role, an unlinked local account of the same name, a deactivated account)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, User

from tests.integration.project_fixtures import make_user
from webapp.audit.models import AuditEvent
from webapp.core.roles import ROLES
from webapp.corpus.models import Collection
from webapp.projects.models import Member
from webapp.projects.services.membership import create_project
from webapp.sso.claims import ClaimsRefused, Mapping
from webapp.sso.models import Identity
from webapp.sso.sync import sign_in

pytestmark = pytest.mark.django_db

ISSUER = "https://id.example.org/realms/lab"
MAPPING = Mapping(
    roles_claim="groups",
    role_values=(("admin", ("wb-admins",)), ("curator", ("wb-curators",)), ("viewer", ("wb-readers",))),
    projects_claim="groups",
)


@pytest.fixture(autouse=True)
def _roles() -> None:
    for name in ROLES:
        Group.objects.get_or_create(name=name)


def _claims(groups: list[str], sub: str = "sub-grace", name: str = "grace") -> dict[str, Any]:
    return {"sub": sub, "preferred_username": name, "email": f"{name}@example.org", "given_name": "Grace",
            "groups": groups}


def _sign_in(claims: dict[str, Any], mapping: Mapping = MAPPING, **options: bool) -> Any:
    flags = {"create": True, "link_existing": False, "roles_from_provider": True, **options}
    return sign_in(ISSUER, claims, mapping, **flags)


def _roles_of(user: Any) -> set[str]:
    return set(user.groups.values_list("name", flat=True))


def test_first_sign_in_creates_the_user_with_the_mapped_role_and_records_it() -> None:
    user = _sign_in(_claims(["wb-curators", "staff"]))
    assert (user.username, user.email, user.first_name) == ("grace", "grace@example.org", "Grace")
    assert _roles_of(user) == {"curator"} and not user.is_staff
    assert not user.has_usable_password()
    assert Identity.objects.get(user=user).subject == "sub-grace"
    created = AuditEvent.objects.get(action="user.created")
    assert (created.object_id, created.actor) == (str(user.pk), None)


def test_each_sign_in_brings_the_role_in_line_with_the_claims() -> None:
    user = _sign_in(_claims(["wb-curators"]))
    again = _sign_in(_claims(["wb-admins"], name="grace.renamed"))  # renamed at the provider: the same user by sub
    assert again.pk == user.pk and User.objects.count() == 1
    assert _roles_of(again) == {"admin"} and again.is_staff  # an admin reaches the Django admin site
    assert _sign_in(_claims(["wb-readers"])).groups.get().name == "viewer"
    changes = AuditEvent.objects.filter(action="user.role_changed").order_by("pk")
    assert [(e.before["role"], e.after["role"]) for e in changes] == [("", "curator"), ("curator", "admin"), ("admin", "viewer")]


def test_no_mapped_role_is_refused_unless_a_default_role_is_set() -> None:
    with pytest.raises(ClaimsRefused, match="no workbench role.*'groups' claim \\(staff\\)"):
        _sign_in(_claims(["staff"]))
    assert not User.objects.exists()
    defaulted = Mapping(roles_claim="groups", default_role="viewer")
    assert _roles_of(_sign_in(_claims(["staff"]), defaulted)) == {"viewer"}


def test_with_roles_kept_in_the_workbench_a_new_user_starts_with_the_mapped_role_which_admins_change_after() -> None:
    user = _sign_in(_claims(["wb-curators"]), roles_from_provider=False)
    assert _roles_of(user) == {"curator"}
    user.groups.set([Group.objects.get(name="admin")])  # an admin's change in the workbench
    assert _roles_of(_sign_in(_claims(["wb-readers"]), roles_from_provider=False)) == {"admin"}


def test_a_local_account_of_the_same_name_is_not_taken_over_unless_linking_is_allowed() -> None:
    local = make_user("grace", group="curator")
    with pytest.raises(ClaimsRefused, match="named 'grace' exists already"):
        _sign_in(_claims(["wb-admins"]))
    assert _roles_of(local) == {"curator"} and not Identity.objects.exists()
    linked = _sign_in(_claims(["wb-admins"]), link_existing=True)
    assert linked.pk == local.pk and _roles_of(linked) == {"admin"}
    assert not AuditEvent.objects.filter(action="user.created").exists()


def test_no_account_is_created_when_creation_is_off_and_a_deactivated_one_is_refused() -> None:
    with pytest.raises(ClaimsRefused, match="not created on sign-in"):
        _sign_in(_claims(["wb-curators"]), create=False)
    user = _sign_in(_claims(["wb-curators"]))
    User.objects.filter(pk=user.pk).update(is_active=False)
    with pytest.raises(ClaimsRefused, match="deactivated"):
        _sign_in(_claims(["wb-curators"]))


def test_project_memberships_follow_the_projects_claim(alice) -> None:  # type: ignore[no-untyped-def]
    notes = Collection.objects.create(slug="notes", title="Notes")
    create_project(by=alice, slug="ncbi", title="NCBI", collection=notes)
    create_project(by=alice, slug="cdr", title="CDR", collection=notes)
    user = _sign_in(_claims(["wb-curators", "project:ncbi:annotator", "project:cdr:manager", "project:gone:annotator"]))
    held = lambda: set(Member.objects.filter(user=user).values_list("project__slug", "role"))  # noqa: E731
    assert held() == {("ncbi", "annotator"), ("cdr", "manager")}
    _sign_in(_claims(["wb-curators", "project:ncbi:adjudicator"]))
    assert held() == {("ncbi", "adjudicator")}
    # The projects' services record each change (the system its actor).
    events = AuditEvent.objects.filter(action__startswith="member.").order_by("pk")
    assert [e.action for e in events] == ["member.added", "member.added", "member.role_changed", "member.removed",
                                          "member.role_changed"]
    assert {e.actor for e in events} == {None}


def test_a_viewer_is_not_made_a_project_member(alice) -> None:  # type: ignore[no-untyped-def]
    create_project(by=alice, slug="ncbi", title="NCBI", collection=Collection.objects.create(slug="notes", title="Notes"))
    user = _sign_in(_claims(["wb-readers", "project:ncbi:annotator"]))
    assert not Member.objects.filter(user=user).exists()  # the projects' rule: members are curators
