"""Queued work is bounded: an admin with MAX_QUEUED_TRAINING_RUNS_PER_USER runs (or MAX_QUEUED_INDEX_BUILDS_PER_USER
builds) queued or running is refused the next one, as is a build of a dictionary with
MAX_QUEUED_INDEX_BUILDS_PER_DICTIONARY under way: 429 naming the cap and its setting in the API, a form error on the
page, nothing created; one ended (or cancelled) makes room; the workbench's own work (no user) is not capped."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from tests.conftest import PASSWORD
from tests.integration.conftest import PROJECT_ROOT
from tests.integration.test_training_runs import _collection, _dictionary
from webapp.corpus.models import Collection
from webapp.linking.models import IndexVersion
from webapp.training.models import TrainingRun
from webapp.training.runs import cancel_run, start_run
from webapp.training.services import queue_index_build

RUN = {"dictionary": "mini", "collections": ["gold"], "params": {"epochs": 1}}


@pytest.fixture
def world(db, settings):  # type: ignore[no-untyped-def]
    settings.TASK_QUEUE_OVERRIDE = "test-nobody-listens"  # the jobs stay queued: nothing runs them
    settings.MAX_QUEUED_TRAINING_RUNS_PER_USER = 2
    settings.MAX_QUEUED_INDEX_BUILDS_PER_USER = 2
    settings.MAX_QUEUED_INDEX_BUILDS_PER_DICTIONARY = 3
    dictionary = _dictionary()
    _collection(dictionary)
    return dictionary


def _api(user) -> APIClient:  # type: ignore[no-untyped-def]
    api = APIClient()
    api.force_authenticate(user)
    return api


def test_the_api_refuses_a_training_run_over_the_users_cap_with_429_naming_the_setting(world, alice, bob) -> None:  # type: ignore[no-untyped-def]
    api = _api(alice)
    first, second = (api.post("/api/training-runs/", RUN, format="json") for _ in range(2))
    assert first.status_code == second.status_code == 202
    third = api.post("/api/training-runs/", RUN, format="json")
    assert third.status_code == 429
    assert third.json() == {"detail": "alice has 2 training runs queued or running, the most one user may have "
                                      "(MAX_QUEUED_TRAINING_RUNS_PER_USER=2): wait for one to end, or cancel one on the "
                                      "training runs page"}
    assert TrainingRun.objects.count() == 2  # nothing was created
    # Another admin has a cap of their own.
    dave = type(alice).objects.create_user("dave", password=PASSWORD)
    dave.groups.add(Group.objects.get(name="admin"))
    assert _api(dave).post("/api/training-runs/", RUN, format="json").status_code == 202
    # A run that ends makes room.
    cancel_run(first.json()["id"])
    assert api.post("/api/training-runs/", RUN, format="json").status_code == 202
    assert TrainingRun.objects.filter(created_by=alice, state__in=TrainingRun.UNFINISHED_STATES).count() == 2


def test_the_api_refuses_index_builds_over_the_users_and_the_dictionarys_caps(world, alice) -> None:  # type: ignore[no-untyped-def]
    api = _api(alice)
    for _ in range(2):
        assert api.post("/api/index-versions/", {"dictionary": "mini"}, format="json").status_code == 202
    refused = api.post("/api/index-versions/", {"dictionary": "mini"}, format="json")
    assert refused.status_code == 429
    assert "(MAX_QUEUED_INDEX_BUILDS_PER_USER=2)" in refused.json()["detail"]
    assert refused.json()["detail"].startswith("alice has 2 index builds queued or running")

    dave = type(alice).objects.create_user("dave", password=PASSWORD)
    dave.groups.add(Group.objects.get(name="admin"))
    assert _api(dave).post("/api/index-versions/", {"dictionary": "mini"}, format="json").status_code == 202
    full = _api(dave).post("/api/index-versions/", {"dictionary": "mini"}, format="json")
    assert full.status_code == 429
    assert full.json() == {"detail": "dictionary mini has 3 index builds queued or running, the most one dictionary "
                                     "may have (MAX_QUEUED_INDEX_BUILDS_PER_DICTIONARY=3): wait for one to end, or "
                                     "cancel one on the models page"}
    assert IndexVersion.objects.filter(state=IndexVersion.State.BUILDING).count() == 3
    # A build that ends makes room.
    IndexVersion.objects.filter(pk=IndexVersion.objects.filter(created_by=alice).order_by("pk")[0].pk).update(
        state=IndexVersion.State.FAILED, error="the worker's disk is full")
    assert _api(dave).post("/api/index-versions/", {"dictionary": "mini"}, format="json").status_code == 202


def test_the_pages_refuse_with_a_form_error(world, alice_client) -> None:  # type: ignore[no-untyped-def]
    form = {"dictionary": "mini", "collections": ["gold"], "epochs": 1, "topk": 20, "dense_ratio": 0.5, "lr": 1e-5,
            "batch_size": 16, "max_length": 25, "train_scope": "auto", "max_queries": 0}
    for _ in range(2):
        assert alice_client.post("/training/runs/new/", form).status_code == 302
    page = alice_client.post("/training/runs/new/", form)
    assert page.status_code == 429
    assert "(MAX_QUEUED_TRAINING_RUNS_PER_USER=2)" in page.content.decode()
    assert page.context["form"].non_field_errors()[0].startswith("alice has 2 training runs queued or running")

    for _ in range(2):
        assert alice_client.post("/training/indexes/build/", {"dictionary": "mini"}).status_code == 302
    page = alice_client.post("/training/indexes/build/", {"dictionary": "mini"})
    assert page.status_code == 429
    assert page.context["build_form"].non_field_errors()[0].startswith("alice has 2 index builds queued or running")
    assert "(MAX_QUEUED_INDEX_BUILDS_PER_USER=2)" in page.content.decode()
    assert IndexVersion.objects.count() == 2


def test_the_workbenchs_own_work_is_not_capped(world) -> None:  # type: ignore[no-untyped-def]
    for _ in range(3):  # a retrain policy's runs, a command's: no user
        start_run(world, Collection.objects.filter(slug="gold"), {"epochs": 1})
    for _ in range(4):  # a release's carried-over builds
        queue_index_build(world, None)
    assert TrainingRun.objects.count() == 3 and IndexVersion.objects.count() == 4


@pytest.mark.parametrize("value", ["0", "many"])
def test_a_bad_cap_stops_start_up_naming_the_setting(value: str) -> None:
    env = dict(os.environ, MAX_QUEUED_INDEX_BUILDS_PER_DICTIONARY=value, DJANGO_SETTINGS_MODULE="webapp.settings")
    done = subprocess.run([sys.executable, "-c", "from django.conf import settings; settings.DEBUG"], env=env,
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    said = "must be at least 1" if value == "0" else "is not an integer"
    assert "MAX_QUEUED_INDEX_BUILDS_PER_DICTIONARY" in done.stderr and said in done.stderr
