"""Training runs through the API: admins start, follow and cancel them; nobody else can."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from webapp.corpus.models import Collection
from webapp.training.models import TrainingRun
from webapp.vocab.models import Dictionary, DictionaryVersion

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(db):  # type: ignore[no-untyped-def]
    d = Dictionary.objects.create(slug="mini", title="Mini")
    DictionaryVersion.objects.create(dictionary=d, release="1", source_format="medic", checksum="t" * 64)
    Collection.objects.create(slug="gold", title="Gold", dictionary=d, has_gold=True)
    Collection.objects.create(slug="dev", title="Dev", dictionary=d, has_gold=True)
    return d


def _client(user=None) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def test_anonymous_401_and_curator_403(bob, world) -> None:  # type: ignore[no-untyped-def]
    body = {"dictionary": "mini", "collections": ["gold"]}
    assert _client().get("/api/training-runs/").status_code == 401
    assert _client(bob).get("/api/training-runs/").status_code == 403
    assert _client(bob).post("/api/training-runs/", body, format="json").status_code == 403
    assert not TrainingRun.objects.exists()


def test_admin_starts_follows_and_cancels_a_run(alice, world) -> None:  # type: ignore[no-untyped-def]
    client = _client(alice)
    response = client.post(
        "/api/training-runs/",
        {"dictionary": "mini", "collections": ["gold"], "eval_collection": "dev", "params": {"epochs": 2}},
        format="json",
    )
    assert response.status_code == 202, response.json()
    run = response.json()
    assert (run["state"], run["dictionary"], run["collections"], run["eval_collection"]) == ("queued", "mini", ["gold"], "dev")
    assert run["params"]["epochs"] == 2 and run["params"]["topk"] == 20  # the paper's default kept
    assert client.get(f"/api/training-runs/{run['id']}/").json()["state"] == "queued"
    cancelled = client.post(f"/api/training-runs/{run['id']}/cancel/")
    assert cancelled.status_code == 200
    assert cancelled.json()["state"] == "cancelled"


def test_bad_requests_name_what_is_wrong(alice, world) -> None:  # type: ignore[no-untyped-def]
    client = _client(alice)
    missing = client.post("/api/training-runs/", {"dictionary": "mini", "collections": ["nope"]}, format="json")
    assert missing.status_code == 400 and "no collection nope" in missing.json()["collections"][0]
    bad_param = client.post("/api/training-runs/", {"dictionary": "mini", "collections": ["gold"], "params": {"warp": 9}}, format="json")
    assert bad_param.status_code == 400 and "warp" in bad_param.json()["detail"]
    folder = client.post("/api/training-runs/", {"dictionary": "mini", "collections": ["gold"], "base_model": "/no/such/model"}, format="json")
    assert folder.status_code == 400 and "not a folder" in folder.json()["base_model"][0]
    assert not TrainingRun.objects.exists()


def test_a_base_model_path_too_long_for_the_file_system_is_a_400_not_a_500(alice, world) -> None:  # type: ignore[no-untyped-def]
    body = {"dictionary": "mini", "collections": ["gold"], "base_model": "a" * 5000}
    response = _client(alice).post("/api/training-runs/", body, format="json")
    assert response.status_code == 400 and "base_model" in response.json()
