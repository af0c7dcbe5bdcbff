"""Shared fixtures: user personas, the shared data folder, and helpers for tests on the real database.

Personas (as in healthchecks' tests): alice is an admin, bob a curator, charlie has an account but no role.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# Taggers predict with torch in tests (and in the workers tests start, which inherit the environment): the default
# ONNX runtime exports each tagger a test trains, some 20 s apiece. tests/integration/test_tagger_runtime.py runs
# the default itself.
os.environ.setdefault("TAGGER_RUNTIME", "torch")

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = PROJECT_ROOT.parent / "shared" / "data"
PASSWORD = "correct-horse-battery-staple"


@pytest.fixture(autouse=True, scope="session")
def _tagger_runtime() -> None:
    from django.conf import settings

    settings.TAGGER_RUNTIME = os.environ["TAGGER_RUNTIME"]


@pytest.fixture(autouse=True)
def _empty_cache() -> Iterator[None]:
    """Each test starts from an empty cache: /healthz answers from it (webapp.core.health), and so do DRF's
    throttles; the local-memory cache would otherwise carry one test's answers into the next. Likewise the
    panel's per-process ancestry cache (a test may add hierarchy edges to concepts an earlier test showed), and its
    rankings, whose background prefetch a test's end waits for (it would otherwise run into the next test)."""
    from django.core.cache import cache

    from webapp.curation.lineage import ANCESTRY
    from webapp.curation.services.rankings import forget_rankings, wait_for_prefetch
    from webapp.linking.registry import forget_active_indexes

    cache.clear()
    forget_active_indexes()  # which index is active, kept a second per process: each test's database says
    ANCESTRY.clear()
    forget_rankings()
    yield
    wait_for_prefetch()
    forget_rankings()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The public data sets of ../shared/data; tests using them skip with a reason where it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"{SHARED_DATA} is absent (public data sets are only on the team's machines and CI)")
    return SHARED_DATA


def _user(django_user_model, username: str, group: str | None):  # type: ignore[no-untyped-def]
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user(username=username, password=PASSWORD, email=f"{username}@example.org")
    if group:
        # get_or_create: a transactional test earlier in the run flushes the groups the migration made.
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    return user


@pytest.fixture
def alice(db, django_user_model):  # type: ignore[no-untyped-def]
    """An admin: imports, trains, promotes."""
    return _user(django_user_model, "alice", "admin")


@pytest.fixture
def bob(db, django_user_model):  # type: ignore[no-untyped-def]
    """A curator: reads and decides."""
    return _user(django_user_model, "bob", "curator")


@pytest.fixture
def charlie(db, django_user_model):  # type: ignore[no-untyped-def]
    """Logged in, but neither curator nor admin."""
    return _user(django_user_model, "charlie", None)


@pytest.fixture
def alice_client(client, alice):  # type: ignore[no-untyped-def]
    client.force_login(alice)
    return client


@pytest.fixture
def bob_client(client, bob):  # type: ignore[no-untyped-def]
    client.force_login(bob)
    return client


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix: None) -> None:
    """One test database per pytest process, so two runs on one server never drop each other's database."""
    import os

    from django.conf import settings

    db = settings.DATABASES["default"]
    db.setdefault("TEST", {})["NAME"] = f"test_{db['NAME']}_{os.getpid()}"


@pytest.fixture(scope="session")
def latte_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the demo collection's tiny LATTE artifact is trained once per session (tests/curation_latte.py)."""
    return tmp_path_factory.mktemp("latte-demo")
