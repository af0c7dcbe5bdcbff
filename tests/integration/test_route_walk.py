"""Every route of the URLconf and the API router, requested by every kind of user over a private project (issue 41's
crawl, kept in the suite; issue 43's personas and statuses): no 5xx for anyone, the status the route's ``who`` says
for each persona (anonymous, a user without a role, a curator outside the project, an annotator of another project,
the project's annotator, its manager, an admin), and no name of a private object in a body (or a redirect) for a
user who may not see it.

The walk is generated from the URLconf and from the API router's registry: a route the table below does not know
fails :func:`test_the_walk_knows_every_route` or :func:`test_the_walk_knows_every_route_and_method_of_the_api_router`,
so a new view cannot skip it. Each route is requested with GET and with an empty POST (the test client does not
enforce CSRF; the CSRF tests live elsewhere). The fixture has evaluations of the private collection, so the training
comparison pages have figures to leak (issue 43's leaks: ``tests/integration/test_private_project_leaks.py``).
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
from webapp.api.urls import router as api_router
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
    users = {"alice": alice, "bob": make_user("bob"), "dana": make_user("dana"), "frank": make_user("frank"),
             "gina": make_user("gina"), "vera": make_user("vera", group="viewer"),
             "charlie": make_user("charlie", group=None)}
    project = create_project(by=alice, slug=PROJECT_SLUG, title=PROJECT_TITLE, collection=private)
    member = add_member(project, users["bob"], Member.Role.ANNOTATOR, alice)
    add_member(project, users["dana"], Member.Role.MANAGER, alice)
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


# Who may open a route (its GET answers 2xx/3xx, or 404 for a missing row; the others are refused 401/403/404, or
# 405 where it takes a POST only). alice is an admin who manages the private project; dana a curator who manages
# it; bob a curator who annotates it; frank a curator outside it; gina annotates another project; vera is a viewer
# (reads what curators read, writes nothing) outside it; charlie has an account and no role.
PERSONAS: tuple[str | None, ...] = (None, "charlie", "vera", "frank", "gina", "bob", "dana", "alice")
PUBLIC, SIGNED_IN, READER, MEMBER, MANAGER, ADJUDICATOR, ADMIN = (
    "public", "signed in", "reader", "member", "manager", "adjudicator", "admin")
ALLOWED: dict[str, frozenset[str | None]] = {
    PUBLIC: frozenset(PERSONAS),
    SIGNED_IN: frozenset(PERSONAS) - {None},
    READER: frozenset({"vera", "frank", "gina", "bob", "dana", "alice"}),  # any workbench role
    MEMBER: frozenset({"bob", "dana", "alice"}),  # a member of the private project (or an admin)
    MANAGER: frozenset({"dana", "alice"}),  # its managers (and adjudicators): settings, members, adjudicated decisions
    ADJUDICATOR: frozenset({"alice"}),  # its adjudicators (dana manages only)
    ADMIN: frozenset({"alice"}),
}
PRIVATE = frozenset({MEMBER, MANAGER, ADJUDICATOR})  # the route names an object of the private project


@dataclass(frozen=True)
class Route:
    url: Url
    who: str = READER

    @property
    def private(self) -> bool:
        return self.who in PRIVATE

    @property
    def public(self) -> bool:
        return self.who == PUBLIC


def _r(url: Url, *, who: str = READER, private: bool = False, public: bool = False) -> Route:
    """``private``: any member of the project may open it; ``public``: anyone, signed in or not."""
    return Route(url, PUBLIC if public else MEMBER if private and who == READER else who)


def _cell(w: World) -> str:
    return f"/training/compare/indexes/{w.index.pk}/collections/{w.private.slug}/"



ROUTES: dict[str, Route] = {
    "": _r(lambda w: "/", who=SIGNED_IN),
    "healthz": _r(lambda w: "/healthz", public=True),
    "help/": _r(lambda w: "/help/", who=SIGNED_IN),  # the documentation site (built or not: 200 either way)
    "help/<path:path>": _r(lambda w: "/help/admin-runs/", who=SIGNED_IN),
    "metrics": _r(lambda w: "/metrics", who=ADMIN),  # or a scraper's METRICS_TOKEN (tests/integration/test_metrics.py)
    "jobs/": _r(lambda w: "/jobs/", who=ADMIN),
    "jobs/<int:pk>/cancel/": _r(lambda w: f"/jobs/{MISSING}/cancel/", who=ADMIN),
    "audit/": _r(lambda w: "/audit/", who=ADMIN),
    "audit/export.jsonl": _r(lambda w: "/audit/export.jsonl", who=ADMIN),
    "people/": _r(lambda w: "/people/", who=MANAGER),  # admins, and managers to add members to their projects
    "people/new/": _r(lambda w: "/people/new/", who=ADMIN),
    "people/members/": _r(lambda w: "/people/members/", who=MANAGER),
    "people/<int:pk>/role/": _r(lambda w: f"/people/{MISSING}/role/", who=ADMIN),
    "people/<int:pk>/active/": _r(lambda w: f"/people/{MISSING}/active/", who=ADMIN),
    "people/<int:pk>/invite/": _r(lambda w: f"/people/{MISSING}/invite/", who=ADMIN),
    "people/tokens/": _r(lambda w: "/people/tokens/", who=SIGNED_IN),  # one's own tokens
    "people/tokens/<int:pk>/revoke/": _r(lambda w: f"/people/tokens/{MISSING}/revoke/", who=SIGNED_IN),
    "imports/": _r(lambda w: "/imports/", who=ADMIN),
    "imports/dictionary/": _r(lambda w: "/imports/dictionary/", who=ADMIN),
    "imports/documents/": _r(lambda w: "/imports/documents/", who=ADMIN),
    "imports/text/": _r(lambda w: "/imports/text/", who=ADMIN),
    "accounts/login/": _r(lambda w: "/accounts/login/", public=True),
    "accounts/logout/": _r(lambda w: "/accounts/logout/", public=True),
    "accounts/password_change/": _r(lambda w: "/accounts/password_change/", who=SIGNED_IN),
    "accounts/password_change/done/": _r(lambda w: "/accounts/password_change/done/", who=SIGNED_IN),
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
        lambda w: f"/dictionaries/{w.dictionary.slug}/releases/{w.release.pk}/carry-over/", who=ADMIN),
    "dictionaries/<slug:slug>/concepts/<path:concept_id>/": _r(
        lambda w: f"/dictionaries/{w.dictionary.slug}/concepts/{w.concept.concept_id}/"),
    "collections/": _r(lambda w: "/collections/"),
    "collections/<slug:slug>/": _r(lambda w: f"/collections/{w.private.slug}/", private=True),
    "collections/<slug:slug>/documents/<int:pk>/": _r(
        lambda w: f"/collections/{w.private.slug}/documents/{w.document.pk}/", private=True),
    "curate/": _r(lambda w: "/curate/"),
    "curate/mentions/<int:pk>/panel/": _r(lambda w: f"/curate/mentions/{w.mention.pk}/panel/", private=True),
    "curate/mentions/<int:pk>/decide/": _r(lambda w: f"/curate/mentions/{w.mention.pk}/decide/", who=MANAGER),
    "curate/mentions/<int:pk>/search/": _r(lambda w: f"/curate/mentions/{w.mention.pk}/search/?q=diabetes", private=True),
    "curate/mentions/<int:pk>/span/": _r(lambda w: f"/curate/mentions/{w.mention.pk}/span/", who=MANAGER),
    "curate/mentions/<int:pk>/family/<int:concept_pk>/": _r(
        lambda w: f"/curate/mentions/{w.mention.pk}/family/{w.concept.pk}/", private=True),
    "curate/decisions/<int:pk>/undo/": _r(lambda w: f"/curate/decisions/{w.decision.pk}/undo/", who=MANAGER),
    "curate/documents/<int:pk>/undo/": _r(lambda w: f"/curate/documents/{w.document.pk}/undo/", who=MANAGER),
    "curate/documents/<int:pk>/mentions/": _r(lambda w: f"/curate/documents/{w.document.pk}/mentions/", who=MANAGER),
    "curate/documents/<int:pk>/detection/": _r(lambda w: f"/curate/documents/{w.document.pk}/detection/", private=True),
    "curate/documents/<int:pk>/detect/": _r(lambda w: f"/curate/documents/{w.document.pk}/detect/", who=ADMIN),
    "curate/<slug:slug>/": _r(lambda w: f"/curate/{w.private.slug}/", private=True),
    "curate/<slug:slug>/queue/next/": _r(lambda w: f"/curate/{w.private.slug}/queue/next/", private=True),
    "curate/<slug:slug>/suggest/": _r(lambda w: f"/curate/{w.private.slug}/suggest/", who=ADMIN),
    "curate/<slug:slug>/corpus-run/": _r(lambda w: f"/curate/{w.private.slug}/corpus-run/", who=ADMIN),
    "curate/<slug:slug>/auto-accept/": _r(lambda w: f"/curate/{w.private.slug}/auto-accept/", who=ADMIN),
    "curate/<slug:slug>/documents/<int:pk>/": _r(
        lambda w: f"/curate/{w.private.slug}/documents/{w.document.pk}/", private=True),
    "projects/": _r(lambda w: "/projects/"),
    "projects/new/": _r(lambda w: "/projects/new/", who=ADMIN),
    "projects/curators/": _r(lambda w: "/projects/curators/", who=ADMIN),
    "projects/<slug:slug>/": _r(lambda w: f"/projects/{w.project.slug}/", private=True),
    "projects/<slug:slug>/settings/": _r(lambda w: f"/projects/{w.project.slug}/settings/", who=MANAGER),
    "projects/<slug:slug>/members/": _r(lambda w: f"/projects/{w.project.slug}/members/", who=MANAGER),
    "projects/<slug:slug>/members/<int:pk>/remove/": _r(
        lambda w: f"/projects/{w.project.slug}/members/{w.member.pk}/remove/", who=MANAGER),
    "projects/<slug:slug>/assign/": _r(lambda w: f"/projects/{w.project.slug}/assign/", who=MANAGER),
    "projects/<slug:slug>/assignments/<int:pk>/remove/": _r(
        lambda w: f"/projects/{w.project.slug}/assignments/{w.assignment.pk}/remove/", who=MANAGER),
    "projects/<slug:slug>/assignments/<int:pk>/done/": _r(
        lambda w: f"/projects/{w.project.slug}/assignments/{w.assignment.pk}/done/", private=True),
    "projects/<slug:slug>/queue/": _r(lambda w: f"/projects/{w.project.slug}/queue/", private=True),
    "projects/<slug:slug>/stats/": _r(lambda w: f"/projects/{w.project.slug}/stats/", private=True),
    "projects/<slug:slug>/dashboard/": _r(lambda w: f"/projects/{w.project.slug}/dashboard/", private=True),
    "projects/<slug:slug>/agreement/": _r(lambda w: f"/projects/{w.project.slug}/agreement/", who=MANAGER),
    "projects/<slug:slug>/adjudicate/": _r(lambda w: f"/projects/{w.project.slug}/adjudicate/", who=ADJUDICATOR),
    "projects/<slug:slug>/adjudicate/<int:pk>/": _r(
        lambda w: f"/projects/{w.project.slug}/adjudicate/{w.document.pk}/", who=ADJUDICATOR),
    "projects/<slug:slug>/adjudicate/<int:pk>/resolve/": _r(
        lambda w: f"/projects/{w.project.slug}/adjudicate/{w.document.pk}/resolve/", who=ADJUDICATOR),
    "projects/<slug:slug>/adjudicate/<int:pk>/concepts/": _r(
        lambda w: f"/projects/{w.project.slug}/adjudicate/{w.document.pk}/concepts/?q=diabetes", who=ADJUDICATOR),
    "training/": _r(lambda w: "/training/", who=ADMIN),
    "training/runs/new/": _r(lambda w: "/training/runs/new/", who=ADMIN),
    "training/runs/<int:pk>/": _r(lambda w: f"/training/runs/{MISSING}/", who=ADMIN),
    "training/runs/<int:pk>/cancel/": _r(lambda w: f"/training/runs/{MISSING}/cancel/", who=ADMIN),
    "training/indexes/<int:pk>/promote/": _r(lambda w: f"/training/indexes/{MISSING}/promote/", who=ADMIN),
    "training/indexes/<int:pk>/evaluate/": _r(lambda w: f"/training/indexes/{w.index.pk}/evaluate/", who=ADMIN),
    "training/indexes/build/": _r(lambda w: "/training/indexes/build/", who=ADMIN),
    "training/indexes/<int:pk>/progress/": _r(lambda w: f"/training/indexes/{w.index.pk}/progress/", who=ADMIN),
    "training/indexes/<int:pk>/cancel/": _r(lambda w: f"/training/indexes/{MISSING}/cancel/", who=ADMIN),
    "training/collections/<slug:slug>/linking/": _r(
        lambda w: f"/training/collections/{w.private.slug}/linking/", private=True),
    "training/models/": _r(lambda w: "/training/models/", who=ADMIN),
    "training/loop/<slug:slug>/": _r(lambda w: f"/training/loop/{w.dictionary.slug}/", who=ADMIN),
    "training/compare/": _r(lambda w: f"/training/compare/?dictionary={w.dictionary.slug}"),
    "training/compare/indexes/<int:pk>/collections/<slug:slug>/": _r(_cell, private=True),
    "training/compare/indexes/<int:pk>/collections/<slug:slug>/evaluate/": _r(
        lambda w: _cell(w) + "evaluate/", who=ADMIN),
    "training/compare/indexes/<int:pk>/collections/<slug:slug>/changes/": _r(
        lambda w: _cell(w) + "changes/", private=True),
    "training/detectors/<int:pk>/activate/": _r(lambda w: f"/training/detectors/{MISSING}/activate/", who=ADMIN),
    "training/detectors/<int:pk>/retire/": _r(lambda w: f"/training/detectors/{MISSING}/retire/", who=ADMIN),
    "training/models/word-vectors/upload/": _r(lambda w: "/training/models/word-vectors/upload/", who=ADMIN),
    "training/models/<slug:slug>/latent-types/": _r(lambda w: f"/training/models/{MISSING}/latent-types/", who=ADMIN),
    # The API (router patterns as the URLconf spells them; the format-suffix twins are left out).
    "api/dictionaries/upload/": _r(lambda w: "/api/dictionaries/upload/", who=ADMIN),
    "api/link": _r(lambda w: "/api/link"),
    "api/link/": _r(lambda w: "/api/link/"),
    "api/auth/token/": _r(lambda w: "/api/auth/token/", public=True),
    "api/schema/": _r(lambda w: "/api/schema/", who=SIGNED_IN),
    "api/docs/": _r(lambda w: "/api/docs/", who=SIGNED_IN),
    "api/redoc/": _r(lambda w: "/api/redoc/", who=SIGNED_IN),
    "api/": _r(lambda w: "/api/", who=SIGNED_IN),
    "api/^dictionaries/$": _r(lambda w: "/api/dictionaries/"),
    "api/^dictionaries/(?P<slug>[^/.]+)/$": _r(lambda w: f"/api/dictionaries/{w.dictionary.slug}/"),
    "api/^concepts/$": _r(lambda w: f"/api/concepts/?dictionary={w.dictionary.slug}"),
    "api/^concepts/(?P<concept_id>[^/]+)/$": _r(
        lambda w: f"/api/concepts/{w.concept.concept_id}/?dictionary={w.dictionary.slug}"),
    "api/^collections/$": _r(lambda w: "/api/collections/"),
    "api/^collections/(?P<slug>[^/.]+)/$": _r(lambda w: f"/api/collections/{w.private.slug}/", private=True),
    "api/^collections/(?P<slug>[^/.]+)/export/$": _r(
        lambda w: f"/api/collections/{w.private.slug}/export/", private=True),
    "api/^collections/(?P<slug>[^/.]+)/documents/$": _r(
        lambda w: f"/api/collections/{w.private.slug}/documents/", private=True),
    "api/^collections/(?P<slug>[^/.]+)/documents/stream/$": _r(
        lambda w: f"/api/collections/{w.private.slug}/documents/stream/", private=True),
    "api/^collections/(?P<slug>[^/.]+)/upload/$": _r(
        lambda w: f"/api/collections/{w.private.slug}/upload/", who=ADMIN),
    "api/^documents/$": _r(lambda w: "/api/documents/"),
    "api/^documents/(?P<pk>[^/.]+)/$": _r(lambda w: f"/api/documents/{w.document.pk}/", private=True),
    "api/^documents/(?P<pk>[^/.]+)/export/$": _r(lambda w: f"/api/documents/{w.document.pk}/export/", private=True),
    "api/^mentions/$": _r(lambda w: "/api/mentions/"),
    "api/^mentions/(?P<pk>[^/.]+)/$": _r(lambda w: f"/api/mentions/{w.mention.pk}/", private=True),
    "api/^mentions/(?P<pk>[^/.]+)/decision/$": _r(lambda w: f"/api/mentions/{w.mention.pk}/decision/", who=MANAGER),
    "api/^links/$": _r(lambda w: "/api/links/"),
    "api/^links/(?P<pk>[^/.]+)/$": _r(lambda w: f"/api/links/{w.link.pk}/", private=True),
    "api/^jobs/$": _r(lambda w: "/api/jobs/", who=ADMIN),
    "api/^jobs/(?P<pk>[^/.]+)/$": _r(lambda w: f"/api/jobs/{MISSING}/", who=ADMIN),
    "api/^jobs/(?P<pk>[^/.]+)/cancel/$": _r(lambda w: f"/api/jobs/{MISSING}/cancel/", who=ADMIN),
    "api/^corpus-runs/$": _r(lambda w: "/api/corpus-runs/", who=ADMIN),
    "api/^audit/$": _r(lambda w: "/api/audit/", who=ADMIN),
    "api/^audit/(?P<pk>[^/.]+)/$": _r(lambda w: f"/api/audit/{MISSING}/", who=ADMIN),
    "api/^imports/$": _r(lambda w: "/api/imports/", who=ADMIN),
    "api/^imports/(?P<pk>[^/.]+)/$": _r(lambda w: f"/api/imports/{MISSING}/", who=ADMIN),
    "api/^training-runs/$": _r(lambda w: "/api/training-runs/", who=ADMIN),
    "api/^training-runs/(?P<pk>[^/.]+)/$": _r(lambda w: f"/api/training-runs/{MISSING}/", who=ADMIN),
    "api/^training-runs/(?P<pk>[^/.]+)/cancel/$": _r(lambda w: f"/api/training-runs/{MISSING}/cancel/", who=ADMIN),
    "api/^index-versions/$": _r(lambda w: "/api/index-versions/", who=ADMIN),
    "api/^index-versions/(?P<pk>[^/.]+)/$": _r(lambda w: f"/api/index-versions/{w.index.pk}/", who=ADMIN),
    "api/^detectors/$": _r(lambda w: "/api/detectors/", who=ADMIN),
    "api/^detectors/(?P<pk>[^/.]+)/$": _r(lambda w: f"/api/detectors/{MISSING}/", who=ADMIN),
    "api/^detectors/(?P<pk>[^/.]+)/activate/$": _r(lambda w: f"/api/detectors/{MISSING}/activate/", who=ADMIN),
    "api/^detectors/(?P<pk>[^/.]+)/retire/$": _r(lambda w: f"/api/detectors/{MISSING}/retire/", who=ADMIN),
    "api/^word-vectors/$": _r(lambda w: "/api/word-vectors/", who=ADMIN),
    "api/^word-vectors/(?P<pk>[^/.]+)/$": _r(lambda w: f"/api/word-vectors/{MISSING}/", who=ADMIN),
    "api/^word-vector-uploads/$": _r(lambda w: "/api/word-vector-uploads/", who=ADMIN),
    "api/^word-vector-uploads/(?P<pk>[^/.]+)/$": _r(lambda w: f"/api/word-vector-uploads/{MISSING}/", who=ADMIN),
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


WALKED_METHODS = frozenset({"GET", "POST"})


def _router_routes() -> Iterator[tuple[str, str, str]]:
    """(the walk's key, method, viewset) for every route and method the API router serves, from its registry."""
    for prefix, viewset, _basename in api_router.registry:
        lookup = api_router.get_lookup_regex(viewset)
        for route in api_router.get_routes(viewset):
            key = "api/" + route.url.format(prefix=prefix, lookup=lookup, trailing_slash=api_router.trailing_slash)
            for method, action in route.mapping.items():
                if hasattr(viewset, action):
                    yield key, method.upper(), viewset.__name__


def test_the_walk_knows_every_route_and_method_of_the_api_router() -> None:
    """The router's registry, read directly: a viewset registered, or given an action or a method (PUT, DELETE)
    the walk does not send, fails here, whatever the URLconf's patterns look like."""
    served = list(_router_routes())
    assert served, "the API router serves no route: the walk would prove nothing"
    unknown = sorted({f"{key} ({viewset})" for key, _method, viewset in served if key not in ROUTES})
    assert not unknown, f"API routes the permission walk does not request (add them to ROUTES): {unknown}"
    unwalked = sorted({f"{method} {key}" for key, method, _viewset in served if method not in WALKED_METHODS})
    assert not unwalked, f"API methods the permission walk does not send (teach _walk to): {unwalked}"


def test_every_route_that_names_a_private_object_is_marked_private(world: World) -> None:
    """A route whose URL names the private project's collection or project is one its outsiders are refused:
    the table cannot leave it open by mistake."""
    loose = [key for key, route in ROUTES.items()
             if not route.private and route.who != ADMIN
             and any(marker in route.url(world) for marker in (SECRET_SLUG, PROJECT_SLUG))]
    assert not loose, f"routes naming a private object but not marked private: {loose}"


# --- the walk ---------------------------------------------------------------------------------------------------

OUTSIDERS = tuple(p for p in PERSONAS if p is not None and p not in ALLOWED[MEMBER])  # may not see the project
REFUSED = frozenset({401, 403, 404, 405})  # 405: the route takes another method, before any check


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
    text = response.getvalue().decode(errors="replace") + " " + location
    return [marker for marker in MARKERS if marker.lower() in text.lower()]


def _walk(world: World, persona: str | None, method: str) -> Iterator[tuple[str, str, Any]]:
    client = _client(world.users[persona] if persona else None)
    for key, route in ROUTES.items():
        if method == "POST" and key == "accounts/logout/" and persona:
            continue  # it would log the persona out for the rest of its walk (the logout is tested elsewhere)
        url = route.url(world)
        response = client.get(url) if method == "GET" else client.post(url, {})
        yield key, url, response


def _status_failure(key: str, url: str, persona: str | None, method: str, status: int) -> str | None:
    """What is wrong with the status a persona got, or None. Who may open the route is the table's ``who``."""
    route = ROUTES[key]
    allowed = persona in ALLOWED[route.who]
    if not allowed:
        if status in REFUSED or (persona is None and status == 302):  # 302: anonymous is sent to log in
            return None
        return f"{status}, not refused (the route is for: {route.who})"
    if method == "POST":
        return None  # an empty form: a 400, a 302 or a refusal of the empty body, all fine for who may post
    expected = {404, 405} if str(MISSING) in url else {200, 286, 302, 405}  # 286: an htmx poll told to stop
    if key == "healthz":
        expected = {200, 503}  # 503: no worker answers in this test
    elif key == "dictionaries/<slug:slug>/releases/":
        expected = {404}  # a single release: nothing to compare it with, said so
    return None if status in expected else f"{status}, expected one of {sorted(expected)} (the route is for: {route.who})"


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_the_walk_finds_no_server_error_no_leak_and_the_right_status(world: World, method: str) -> None:
    """One test for the whole walk, so that its report lists every failure at once: every persona, every route;
    no 5xx, the status its ``who`` says, and no private name in what an outsider is shown."""
    failures: list[str] = []
    for persona in PERSONAS:
        who = persona or "anonymous"
        for key, url, response in _walk(world, persona, method):
            status = response.status_code
            if status >= 500 and not (key == "healthz" and status == 503):  # 503: the test has no worker
                failures.append(f"{who} {method} {url}: {status}")
                continue
            wrong = _status_failure(key, url, persona, method, status)
            if wrong:
                failures.append(f"{who} {method} {url}: {wrong}")
            if persona is None or persona in OUTSIDERS:
                leaked = _leaks(response)
                if leaked:
                    failures.append(f"{who} {method} {url}: {status} shows {leaked}")
    assert not failures, f"{len(failures)} failures of the walk:\n" + "\n".join(failures)


def test_the_private_pages_show_the_project_to_its_member(world: World) -> None:
    """The markers are real: a member reads the private collection's names where an outsider is refused them."""
    response = _client(world.users["bob"]).get(f"/projects/{world.project.slug}/")
    assert response.status_code == 200
    assert PROJECT_TITLE in response.content.decode()
    assert re.search(SECRET_TITLE, _client(world.users["alice"]).get("/collections/").content.decode())


def _workspace_urls(w: World) -> list[str]:
    """The pages and API details of bob's copy of the assigned document, in his workspace."""
    copy = w.assignment.copy
    workspace = copy.collection.slug
    mention = Mention.objects.filter(document=copy).order_by("start").first()
    assert mention is not None
    return [f"/collections/{workspace}/", f"/collections/{workspace}/documents/{copy.pk}/", f"/curate/{workspace}/",
            f"/curate/{workspace}/documents/{copy.pk}/", f"/curate/mentions/{mention.pk}/panel/",
            f"/api/collections/{workspace}/", f"/api/documents/{copy.pk}/", f"/api/mentions/{mention.pk}/",
            f"/api/collections/{workspace}/export/", f"/api/documents/{copy.pk}/export/"]


def test_an_annotators_workspace_is_theirs_their_managers_and_the_admins(world: World) -> None:
    """Pages and API alike (issue 43's parity): bob reads his copies, so do the project's manager and the admin;
    nobody else, whatever their role."""
    readers = {"bob", "dana", "alice"}
    failures = []
    for persona in PERSONAS[1:]:
        client = _client(world.users[persona])
        for url in _workspace_urls(world):
            status = client.get(url).status_code
            if (persona in readers and status != 200) or (persona not in readers and status not in (403, 404)):
                failures.append(f"{persona} GET {url}: {status}")
    assert not failures, "\n".join(failures)
