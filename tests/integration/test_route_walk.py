"""Every route of the URLconf and the API router, requested by every kind of user over a private project (issue 41's
crawl, kept in the suite): no 5xx for anyone, no page for anonymous but the login page and the health check, and no
name of a private object in a body (or a redirect) for a user who may not see it.

The walk is generated from the URLconf: a route the table below does not know fails
:func:`test_the_walk_knows_every_route`, so a new view cannot skip it. Each route is requested with GET and with an
empty POST (the test client does not enforce CSRF; the CSRF tests live elsewhere).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from tests.integration.project_fixtures import demo_collection, make_user  # noqa: F401 (fixture)
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.curation import services
from webapp.curation.models import Decision
from webapp.linking.models import IndexVersion
from webapp.projects.models import Assignment, Member, Project
from webapp.projects.services.membership import add_member, create_project
from webapp.teamwork.services.assignment import Mode, assign
from webapp.training.evaluation import run_evaluation
from webapp.training.models import Evaluation
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

# Names nobody outside the project may read anywhere: chosen so that no other text of the demo data contains them.
SECRET_SLUG, SECRET_TITLE = "secret-cohort-x7", "Secret Cohort Xylophone"
PROJECT_SLUG, PROJECT_TITLE = "hidden-proj-q9", "Hidden Project Quokka"
SECRET_DOC_PREFIX = "secretdoc-"
MARKERS = (SECRET_SLUG, SECRET_TITLE, PROJECT_SLUG, PROJECT_TITLE, SECRET_DOC_PREFIX)
MISSING = 999_999  # a primary key no row has: the route must say 404, not fail


@dataclass
class World:
    dictionary: Dictionary
    release: DictionaryVersion
    concept: Concept
    private: Collection
    document: Document
    mention: Mention
    link: Link
    decision: Decision
    project: Project
    member: Member
    assignment: Assignment
    index: IndexVersion
    users: dict[str, Any]


@pytest.fixture
def world(demo_collection, alice) -> World:  # type: ignore[no-untyped-def]  # noqa: F811
    """The demo collection made private to project "hidden" (renamed so that its names are unmistakable): alice
    (admin) manages it, bob annotates it (one document assigned), frank is a curator outside it, gina annotates
    another project's collection, charlie has an account and no role. One evaluation of the active index on the
    private collection feeds the comparison pages."""
    Collection.objects.filter(pk=demo_collection.pk).update(slug=SECRET_SLUG, title=SECRET_TITLE)
    private = Collection.objects.get(pk=demo_collection.pk)
    for n, document in enumerate(Document.objects.filter(collection=private).order_by("pk"), start=1):
        Document.objects.filter(pk=document.pk).update(external_id=f"{SECRET_DOC_PREFIX}{n}")
    users = {"alice": alice, "bob": make_user("bob"), "frank": make_user("frank"), "gina": make_user("gina"),
             "charlie": make_user("charlie", group=None)}
    project = create_project(by=alice, slug=PROJECT_SLUG, title=PROJECT_TITLE, collection=private)
    member = add_member(project, users["bob"], Member.Role.ANNOTATOR, alice)
    document = Document.objects.filter(collection=private).order_by("pk").first()
    assert document is not None
    (assignment,) = assign(project, mode=Mode.MANUAL, annotators=[users["bob"]], by=alice, documents=[document])

    open_collection = Collection.objects.create(slug="open-notes", title="Open notes", dictionary=private.dictionary)
    Document.objects.create(collection=open_collection, external_id="open-1", title="Open", text="Asthma in children.")
    other = create_project(by=alice, slug="other-team", title="Other team", collection=open_collection)
    add_member(other, users["gina"], Member.Role.ANNOTATOR, alice)

    mention = Mention.objects.filter(document=document).order_by("start").first()
    assert mention is not None
    link = Link.objects.filter(mention__document=document).first()
    assert link is not None
    decided = Mention.objects.filter(document=document).order_by("-start").first()
    assert decided is not None
    decision = services.decide(user=alice, mention_id=decided.pk, action="nil", seen_updated_at=decided.updated_at,
                               part=None).decision
    index = IndexVersion.objects.get(dictionary=private.dictionary, state=IndexVersion.State.ACTIVE)
    evaluation = Evaluation.objects.create(index_version=index, collection=private)
    assert run_evaluation(evaluation.pk) == Evaluation.State.SUCCEEDED
    dictionary = private.dictionary
    concept = Concept.objects.filter(version=dictionary.latest_version()).order_by("pk").first()
    assert concept is not None
    return World(dictionary=dictionary, release=dictionary.latest_version(), concept=concept, private=private,
                 document=document, mention=mention, link=link, decision=decision, project=project, member=member,
                 assignment=assignment, index=index, users=users)


# --- the routes ---------------------------------------------------------------------------------------------------

Url = Callable[[World], str]


@dataclass(frozen=True)
class Route:
    url: Url
    private: bool = False  # the URL names an object of the private project: outsiders get 403/404 (or 405)
    public: bool = False  # anonymous may read it


def _r(url: Url, *, private: bool = False, public: bool = False) -> Route:
    return Route(url, private, public)


def _cell(w: World) -> str:
    return f"/training/compare/indexes/{w.index.pk}/collections/{w.private.slug}/"


def _workspace_document(w: World) -> Document:
    return w.assignment.copy


ROUTES: dict[str, Route] = {
    "": _r(lambda w: "/"),
    "healthz": _r(lambda w: "/healthz", public=True),
    "jobs/": _r(lambda w: "/jobs/"),
    "jobs/<int:pk>/cancel/": _r(lambda w: f"/jobs/{MISSING}/cancel/"),
    "audit/": _r(lambda w: "/audit/"),
    "audit/export.jsonl": _r(lambda w: "/audit/export.jsonl"),
    "people/": _r(lambda w: "/people/"),
    "people/new/": _r(lambda w: "/people/new/"),
    "people/members/": _r(lambda w: "/people/members/"),
    "people/<int:pk>/role/": _r(lambda w: f"/people/{MISSING}/role/"),
    "people/<int:pk>/active/": _r(lambda w: f"/people/{MISSING}/active/"),
    "people/<int:pk>/invite/": _r(lambda w: f"/people/{MISSING}/invite/"),
    "people/tokens/": _r(lambda w: "/people/tokens/"),
    "people/tokens/<int:pk>/revoke/": _r(lambda w: f"/people/tokens/{MISSING}/revoke/"),
    "imports/": _r(lambda w: "/imports/"),
    "imports/dictionary/": _r(lambda w: "/imports/dictionary/"),
    "imports/documents/": _r(lambda w: "/imports/documents/"),
    "imports/text/": _r(lambda w: "/imports/text/"),
    "accounts/login/": _r(lambda w: "/accounts/login/", public=True),
    "accounts/logout/": _r(lambda w: "/accounts/logout/", public=True),
    "accounts/password_change/": _r(lambda w: "/accounts/password_change/"),
    "accounts/password_change/done/": _r(lambda w: "/accounts/password_change/done/"),
    "accounts/password_reset/": _r(lambda w: "/accounts/password_reset/", public=True),
    "accounts/password_reset/done/": _r(lambda w: "/accounts/password_reset/done/", public=True),
    # Single sign-on's start and the provider's callback (webapp.sso): open, they send anyone back to the login page
    # while SSO is off or without the provider's answer.
    "oidc/authenticate/": _r(lambda w: "/oidc/authenticate/", public=True),
    "oidc/callback/": _r(lambda w: "/oidc/callback/", public=True),
    "accounts/reset/<uidb64>/<token>/": _r(lambda w: "/accounts/reset/MQ/set-password/", public=True),
    "accounts/reset/done/": _r(lambda w: "/accounts/reset/done/", public=True),
    "dictionaries/": _r(lambda w: "/dictionaries/"),
    "dictionaries/<slug:slug>/": _r(lambda w: f"/dictionaries/{w.dictionary.slug}/"),
    "dictionaries/<slug:slug>/search/": _r(lambda w: f"/dictionaries/{w.dictionary.slug}/search/?q=diabetes"),
    "dictionaries/<slug:slug>/releases/": _r(lambda w: f"/dictionaries/{w.dictionary.slug}/releases/"),
    "dictionaries/<slug:slug>/releases/<int:pk>/carry-over/": _r(
        lambda w: f"/dictionaries/{w.dictionary.slug}/releases/{w.release.pk}/carry-over/"),
    "dictionaries/<slug:slug>/concepts/<path:concept_id>/": _r(
        lambda w: f"/dictionaries/{w.dictionary.slug}/concepts/{w.concept.concept_id}/"),
    "collections/": _r(lambda w: "/collections/"),
    "collections/<slug:slug>/": _r(lambda w: f"/collections/{w.private.slug}/", private=True),
    "collections/<slug:slug>/documents/<int:pk>/": _r(
        lambda w: f"/collections/{w.private.slug}/documents/{w.document.pk}/", private=True),
    "curate/": _r(lambda w: "/curate/"),
    "curate/mentions/<int:pk>/panel/": _r(lambda w: f"/curate/mentions/{w.mention.pk}/panel/", private=True),
    "curate/mentions/<int:pk>/decide/": _r(lambda w: f"/curate/mentions/{w.mention.pk}/decide/", private=True),
    "curate/mentions/<int:pk>/search/": _r(lambda w: f"/curate/mentions/{w.mention.pk}/search/?q=diabetes", private=True),
    "curate/mentions/<int:pk>/span/": _r(lambda w: f"/curate/mentions/{w.mention.pk}/span/", private=True),
    "curate/mentions/<int:pk>/family/<int:concept_pk>/": _r(
        lambda w: f"/curate/mentions/{w.mention.pk}/family/{w.concept.pk}/", private=True),
    "curate/decisions/<int:pk>/undo/": _r(lambda w: f"/curate/decisions/{w.decision.pk}/undo/", private=True),
    "curate/documents/<int:pk>/undo/": _r(lambda w: f"/curate/documents/{w.document.pk}/undo/", private=True),
    "curate/documents/<int:pk>/mentions/": _r(lambda w: f"/curate/documents/{w.document.pk}/mentions/", private=True),
    "curate/documents/<int:pk>/detection/": _r(lambda w: f"/curate/documents/{w.document.pk}/detection/", private=True),
    "curate/documents/<int:pk>/detect/": _r(lambda w: f"/curate/documents/{w.document.pk}/detect/", private=True),
    "curate/<slug:slug>/": _r(lambda w: f"/curate/{w.private.slug}/", private=True),
    "curate/<slug:slug>/queue/next/": _r(lambda w: f"/curate/{w.private.slug}/queue/next/", private=True),
    "curate/<slug:slug>/suggest/": _r(lambda w: f"/curate/{w.private.slug}/suggest/", private=True),
    "curate/<slug:slug>/auto-accept/": _r(lambda w: f"/curate/{w.private.slug}/auto-accept/", private=True),
    "curate/<slug:slug>/documents/<int:pk>/": _r(
        lambda w: f"/curate/{w.private.slug}/documents/{w.document.pk}/", private=True),
    "projects/": _r(lambda w: "/projects/"),
    "projects/new/": _r(lambda w: "/projects/new/"),
    "projects/curators/": _r(lambda w: "/projects/curators/"),
    "projects/<slug:slug>/": _r(lambda w: f"/projects/{w.project.slug}/", private=True),
    "projects/<slug:slug>/settings/": _r(lambda w: f"/projects/{w.project.slug}/settings/", private=True),
    "projects/<slug:slug>/members/": _r(lambda w: f"/projects/{w.project.slug}/members/", private=True),
    "projects/<slug:slug>/members/<int:pk>/remove/": _r(
        lambda w: f"/projects/{w.project.slug}/members/{w.member.pk}/remove/", private=True),
    "projects/<slug:slug>/assign/": _r(lambda w: f"/projects/{w.project.slug}/assign/", private=True),
    "projects/<slug:slug>/assignments/<int:pk>/remove/": _r(
        lambda w: f"/projects/{w.project.slug}/assignments/{w.assignment.pk}/remove/", private=True),
    "projects/<slug:slug>/assignments/<int:pk>/done/": _r(
        lambda w: f"/projects/{w.project.slug}/assignments/{w.assignment.pk}/done/", private=True),
    "projects/<slug:slug>/queue/": _r(lambda w: f"/projects/{w.project.slug}/queue/", private=True),
    "projects/<slug:slug>/stats/": _r(lambda w: f"/projects/{w.project.slug}/stats/", private=True),
    "projects/<slug:slug>/agreement/": _r(lambda w: f"/projects/{w.project.slug}/agreement/", private=True),
    "projects/<slug:slug>/adjudicate/": _r(lambda w: f"/projects/{w.project.slug}/adjudicate/", private=True),
    "projects/<slug:slug>/adjudicate/<int:pk>/": _r(
        lambda w: f"/projects/{w.project.slug}/adjudicate/{w.document.pk}/", private=True),
    "projects/<slug:slug>/adjudicate/<int:pk>/resolve/": _r(
        lambda w: f"/projects/{w.project.slug}/adjudicate/{w.document.pk}/resolve/", private=True),
    "projects/<slug:slug>/adjudicate/<int:pk>/concepts/": _r(
        lambda w: f"/projects/{w.project.slug}/adjudicate/{w.document.pk}/concepts/?q=diabetes", private=True),
    "training/": _r(lambda w: "/training/"),
    "training/runs/new/": _r(lambda w: "/training/runs/new/"),
    "training/runs/<int:pk>/": _r(lambda w: f"/training/runs/{MISSING}/"),
    "training/runs/<int:pk>/cancel/": _r(lambda w: f"/training/runs/{MISSING}/cancel/"),
    "training/indexes/<int:pk>/promote/": _r(lambda w: f"/training/indexes/{MISSING}/promote/"),
    "training/indexes/<int:pk>/evaluate/": _r(lambda w: f"/training/indexes/{w.index.pk}/evaluate/"),
    "training/indexes/build/": _r(lambda w: "/training/indexes/build/"),
    "training/indexes/<int:pk>/progress/": _r(lambda w: f"/training/indexes/{w.index.pk}/progress/"),
    "training/indexes/<int:pk>/cancel/": _r(lambda w: f"/training/indexes/{MISSING}/cancel/"),
    "training/collections/<slug:slug>/linking/": _r(
        lambda w: f"/training/collections/{w.private.slug}/linking/", private=True),
    "training/models/": _r(lambda w: "/training/models/"),
    "training/loop/<slug:slug>/": _r(lambda w: f"/training/loop/{w.dictionary.slug}/"),
    "training/compare/": _r(lambda w: f"/training/compare/?dictionary={w.dictionary.slug}"),
    "training/compare/indexes/<int:pk>/collections/<slug:slug>/": _r(_cell, private=True),
    "training/compare/indexes/<int:pk>/collections/<slug:slug>/evaluate/": _r(
        lambda w: _cell(w) + "evaluate/", private=True),
    "training/compare/indexes/<int:pk>/collections/<slug:slug>/changes/": _r(
        lambda w: _cell(w) + "changes/", private=True),
    "training/detectors/<int:pk>/activate/": _r(lambda w: f"/training/detectors/{MISSING}/activate/"),
    "training/detectors/<int:pk>/retire/": _r(lambda w: f"/training/detectors/{MISSING}/retire/"),
    "training/models/word-vectors/upload/": _r(lambda w: "/training/models/word-vectors/upload/"),
    "training/models/<slug:slug>/latent-types/": _r(lambda w: f"/training/models/{MISSING}/latent-types/"),
    # The API (router patterns as the URLconf spells them; the format-suffix twins are left out).
    "api/dictionaries/upload/": _r(lambda w: "/api/dictionaries/upload/"),
    "api/link": _r(lambda w: "/api/link"),
    "api/link/": _r(lambda w: "/api/link/"),
    "api/auth/token/": _r(lambda w: "/api/auth/token/", public=True),
    "api/schema/": _r(lambda w: "/api/schema/"),
    "api/docs/": _r(lambda w: "/api/docs/"),
    "api/redoc/": _r(lambda w: "/api/redoc/"),
    "api/": _r(lambda w: "/api/"),
    "api/^dictionaries/$": _r(lambda w: "/api/dictionaries/"),
    "api/^dictionaries/(?P<slug>[^/.]+)/$": _r(lambda w: f"/api/dictionaries/{w.dictionary.slug}/"),
    "api/^concepts/$": _r(lambda w: f"/api/concepts/?dictionary={w.dictionary.slug}"),
    "api/^concepts/(?P<concept_id>[^/]+)/$": _r(
        lambda w: f"/api/concepts/{w.concept.concept_id}/?dictionary={w.dictionary.slug}"),
    "api/^collections/$": _r(lambda w: "/api/collections/"),
    "api/^collections/(?P<slug>[^/.]+)/$": _r(lambda w: f"/api/collections/{w.private.slug}/", private=True),
    "api/^collections/(?P<slug>[^/.]+)/export/$": _r(
        lambda w: f"/api/collections/{w.private.slug}/export/", private=True),
    "api/^collections/(?P<slug>[^/.]+)/upload/$": _r(
        lambda w: f"/api/collections/{w.private.slug}/upload/", private=True),
    "api/^documents/$": _r(lambda w: "/api/documents/"),
    "api/^documents/(?P<pk>[^/.]+)/$": _r(lambda w: f"/api/documents/{w.document.pk}/", private=True),
    "api/^documents/(?P<pk>[^/.]+)/export/$": _r(lambda w: f"/api/documents/{w.document.pk}/export/", private=True),
    "api/^mentions/$": _r(lambda w: "/api/mentions/"),
    "api/^mentions/(?P<pk>[^/.]+)/$": _r(lambda w: f"/api/mentions/{w.mention.pk}/", private=True),
    "api/^mentions/(?P<pk>[^/.]+)/decision/$": _r(lambda w: f"/api/mentions/{w.mention.pk}/decision/", private=True),
    "api/^links/$": _r(lambda w: "/api/links/"),
    "api/^links/(?P<pk>[^/.]+)/$": _r(lambda w: f"/api/links/{w.link.pk}/", private=True),
    "api/^jobs/$": _r(lambda w: "/api/jobs/"),
    "api/^jobs/(?P<pk>[^/.]+)/$": _r(lambda w: f"/api/jobs/{MISSING}/"),
    "api/^jobs/(?P<pk>[^/.]+)/cancel/$": _r(lambda w: f"/api/jobs/{MISSING}/cancel/"),
    "api/^imports/$": _r(lambda w: "/api/imports/"),
    "api/^imports/(?P<pk>[^/.]+)/$": _r(lambda w: f"/api/imports/{MISSING}/"),
    "api/^training-runs/$": _r(lambda w: "/api/training-runs/"),
    "api/^training-runs/(?P<pk>[^/.]+)/$": _r(lambda w: f"/api/training-runs/{MISSING}/"),
    "api/^training-runs/(?P<pk>[^/.]+)/cancel/$": _r(lambda w: f"/api/training-runs/{MISSING}/cancel/"),
    "api/^index-versions/$": _r(lambda w: "/api/index-versions/"),
    "api/^index-versions/(?P<pk>[^/.]+)/$": _r(lambda w: f"/api/index-versions/{w.index.pk}/"),
    "api/^detectors/$": _r(lambda w: "/api/detectors/"),
    "api/^detectors/(?P<pk>[^/.]+)/$": _r(lambda w: f"/api/detectors/{MISSING}/"),
    "api/^detectors/(?P<pk>[^/.]+)/activate/$": _r(lambda w: f"/api/detectors/{MISSING}/activate/"),
    "api/^detectors/(?P<pk>[^/.]+)/retire/$": _r(lambda w: f"/api/detectors/{MISSING}/retire/"),
    "api/^word-vectors/$": _r(lambda w: "/api/word-vectors/"),
    "api/^word-vectors/(?P<pk>[^/.]+)/$": _r(lambda w: f"/api/word-vectors/{MISSING}/"),
    "api/^word-vector-uploads/$": _r(lambda w: "/api/word-vector-uploads/"),
    "api/^word-vector-uploads/(?P<pk>[^/.]+)/$": _r(lambda w: f"/api/word-vector-uploads/{MISSING}/"),
}

# Routes the walk leaves out, each with the reason.
NOT_WALKED = {
    "api/^.*/$": "the API's catch-all 404 (any unknown path under /api/)",
}


def _patterns(resolver: URLResolver, prefix: str = "") -> Iterator[str]:
    for pattern in resolver.url_patterns:
        text = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            if text.startswith("admin/"):  # Django's admin site: staff only, its own permission system
                continue
            yield from _patterns(pattern, text)
        elif isinstance(pattern, URLPattern):
            if "(?P<format>" in text or "<drf_format_suffix:format>" in text:
                continue  # the same view with a ".json" suffix
            yield text


def test_the_walk_knows_every_route() -> None:
    routes = set(_patterns(get_resolver()))
    unknown = sorted(routes - set(ROUTES) - set(NOT_WALKED))
    assert not unknown, f"routes the permission walk does not request (add them to ROUTES): {unknown}"
    gone = sorted(set(ROUTES) - routes)
    assert not gone, f"ROUTES names routes the URLconf no longer has: {gone}"


# --- the walk ---------------------------------------------------------------------------------------------------

OUTSIDERS = ("frank", "gina", "charlie")  # may not see the private project's objects
INSIDERS = ("bob", "alice")


def _client(user: Any | None) -> Client:
    client = Client(raise_request_exception=False)
    if user is not None:
        client.force_login(user)
    return client


def _leaks(response: Any) -> list[str]:
    """The private names in a body or a redirect that is not a refusal. A refusal (401/403/404) may name what the
    user asked for and whom to ask (webapp.projects.access); a redirect to the login page carries the requested path
    back as ``next``, which the user typed."""
    if response.status_code in (401, 403, 404):
        return []
    location = response.get("Location", "").split("?next=")[0]
    text = response.content.decode(errors="replace") + " " + location
    return [marker for marker in MARKERS if marker.lower() in text.lower()]


def _walk(world: World, persona: str | None, method: str) -> Iterator[tuple[str, str, Any]]:
    client = _client(world.users[persona] if persona else None)
    for key, route in ROUTES.items():
        if method == "POST" and key == "accounts/logout/" and persona:
            continue  # it would log the persona out for the rest of its walk (the logout is tested elsewhere)
        url = route.url(world)
        response = client.get(url) if method == "GET" else client.post(url, {})
        yield key, url, response


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_the_walk_finds_no_server_error_no_leak_and_no_anonymous_page(world: World, method: str) -> None:
    """One test for the whole walk, so that its report lists every failure at once."""
    failures: list[str] = []
    for persona in (None, *OUTSIDERS, *INSIDERS):
        who = persona or "anonymous"
        for key, url, response in _walk(world, persona, method):
            status = response.status_code
            if status >= 500 and not (key == "healthz" and status == 503):  # 503: the test has no worker
                failures.append(f"{who} {method} {url}: {status}")
                continue
            if persona is None and not ROUTES[key].public and status not in (302, 401, 403, 405):
                failures.append(f"anonymous {method} {url}: {status}, not sent to log in")
            if persona in OUTSIDERS or persona is None:
                leaked = _leaks(response)
                if leaked:
                    failures.append(f"{who} {method} {url}: {status} shows {leaked}")
                if ROUTES[key].private and persona is not None and status not in (403, 404, 405):
                    failures.append(f"{who} {method} {url}: {status}, not refused")
    assert not failures, f"{len(failures)} failures of the walk:\n" + "\n".join(failures)


def test_the_walks_urls_are_real_for_an_admin(world: World) -> None:
    """The table's URLs name existing objects (else the walk proves nothing): an admin reads every page the walk
    does not point at a missing row, apart from those that only take a POST."""
    failures = []
    for key, url, response in _walk(world, "alice", "GET"):
        if str(MISSING) in url:
            if response.status_code not in (404, 405):
                failures.append(f"{url}: {response.status_code} for a missing row")
        elif key == "healthz":
            assert response.status_code in (200, 503)  # 503: no worker answers in this test
        elif key == "dictionaries/<slug:slug>/releases/":
            assert response.status_code == 404  # a single release: nothing to compare it with, said so
        elif response.status_code not in (200, 286, 302, 405):  # 286: an htmx poll told to stop
            failures.append(f"{url}: {response.status_code}")
    assert not failures, "\n".join(failures)


def test_the_private_pages_show_the_project_to_its_member(world: World) -> None:
    """The markers are real: a member reads the private collection's names where an outsider is refused them."""
    response = _client(world.users["bob"]).get(f"/projects/{world.project.slug}/")
    assert response.status_code == 200
    assert PROJECT_TITLE in response.content.decode()
    assert re.search(SECRET_TITLE, _client(world.users["alice"]).get("/collections/").content.decode())
