"""Mention detector versions: one atomic switch makes one active per dictionary (the database refuses a second),
the active one is loaded once per process and finds spans, and only admins switch them (models page, API, command)."""

from __future__ import annotations

import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import IntegrityError, transaction
from rest_framework.test import APIClient

from linker.detect.spans import Span
from webapp.linking.models import DetectorVersion
from webapp.linking.taggers import forget_all, get_active_tagger
from webapp.training.detectors import DetectorActivationError, activate_detector, retire_detector
from webapp.vocab.models import Dictionary


@pytest.fixture(scope="module")
def tagger_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An untrained tagger over the default base model, saved once: loading and predicting are what is tested."""
    from linker.detect.tagger import Tagger

    folder = tmp_path_factory.mktemp("tagger") / "tagger"
    Tagger.from_base(max_length=64, stride=16, mention_types=("Disease",), device="cpu").save(folder)
    return folder


def _versions(folder: Path, tmp_path: Path, n: int = 2, slug: str = "spans") -> list[DetectorVersion]:
    dictionary, _ = Dictionary.objects.get_or_create(slug=slug, defaults={"title": slug.title()})
    out = []
    for i in range(n):
        copy = tmp_path / f"{slug}-{i}"
        shutil.copytree(folder, copy)
        out.append(DetectorVersion.objects.create(
            dictionary=dictionary, label=f"{slug}-tagger-{i}", artifact_path=str(copy), mention_types=["Disease"],
            metrics={"precision": 0.75, "recall": 0.5, "f1": 0.6, "f1_overlap": 0.8, "gold": 4}))
    return out


@pytest.mark.django_db
def test_activation_is_one_switch_and_the_database_allows_one_active(tagger_folder: Path, tmp_path: Path, alice) -> None:  # type: ignore[no-untyped-def]
    first, second = _versions(tagger_folder, tmp_path)
    other, = _versions(tagger_folder, tmp_path, 1, "other")
    assert activate_detector(first, alice).state == DetectorVersion.State.ACTIVE
    activate_detector(other.pk)
    second = activate_detector(second.pk, alice)
    first.refresh_from_db()
    assert (first.state, second.state, second.activated_by) == ("retired", "active", alice)
    assert first.retired_at is not None and second.retired_at is None
    assert DetectorVersion.objects.get(pk=other.pk).state == "active"  # another dictionary's stays
    assert activate_detector(second.pk).activated_at == second.activated_at  # already active: unchanged

    with pytest.raises(IntegrityError), transaction.atomic():
        DetectorVersion.objects.filter(pk=first.pk).update(state=DetectorVersion.State.ACTIVE)

    # Retired, it can be activated again; retiring the active one leaves the dictionary without a detector.
    assert activate_detector(first.pk).state == "active"
    assert DetectorVersion.objects.get(pk=second.pk).state == "retired"
    assert retire_detector(first.pk).state == "retired" and get_active_tagger("spans") is None

    shutil.rmtree(second.artifact_path)
    with pytest.raises(DetectorActivationError, match="is missing"):
        activate_detector(second.pk)
    assert DetectorVersion.objects.filter(dictionary__slug="spans", state="active").count() == 0

    out = StringIO()
    call_command("activate_detector", str(first.pk), stdout=out)
    assert "spans-tagger-0 is the active detector of spans" in out.getvalue()
    with pytest.raises(CommandError, match="no detector version 999999"):
        call_command("activate_detector", "999999")


@pytest.mark.django_db
def test_the_active_tagger_is_loaded_once_and_finds_spans(tagger_folder: Path, tmp_path: Path) -> None:
    forget_all()
    first, second = _versions(tagger_folder, tmp_path)
    assert get_active_tagger("spans") is None
    activate_detector(first.pk)
    active = get_active_tagger("spans")
    assert active is not None and (active.label, active.detector_version_id, active.mention_types) == (
        "spans-tagger-0", first.pk, ("Disease",))
    assert get_active_tagger("spans").tagger is active.tagger  # type: ignore[union-attr]  # cached in the process
    texts = ["Patients with asthma were enrolled.", ""]
    found = active.tagger.predict(texts)
    assert len(found) == 2 and found[1] == []
    assert all(isinstance(s, Span) and texts[0][s.start:s.end] == s.text for s in found[0])

    activate_detector(second.pk)
    switched = get_active_tagger("spans")
    assert switched is not None and switched.detector_version_id == second.pk and switched.tagger is not active.tagger
    from webapp.linking import taggers

    assert set(taggers._loaded) == {second.pk}  # the retired one's memory went back
    forget_all()


@pytest.mark.django_db
def test_only_admins_list_and_switch_detectors_through_the_api(tagger_folder: Path, tmp_path: Path, alice, bob) -> None:  # type: ignore[no-untyped-def]
    first, second = _versions(tagger_folder, tmp_path)
    _versions(tagger_folder, tmp_path, 1, "other")
    api = APIClient()
    assert api.get("/api/detectors/").status_code == 401
    assert api.post(f"/api/detectors/{first.pk}/activate/").status_code == 401
    api.force_authenticate(bob)
    assert api.get("/api/detectors/").status_code == 403
    assert api.post(f"/api/detectors/{first.pk}/activate/").status_code == 403
    assert DetectorVersion.objects.get(pk=first.pk).state == "ready"

    # A token, as pipelines use it.
    from webapp.people.tokens import issue_token

    api = APIClient(HTTP_AUTHORIZATION=f"Token {issue_token(alice, 'pipeline').key}")
    listed = api.get("/api/detectors/?dictionary=spans").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert [r["label"] for r in rows] == ["spans-tagger-1", "spans-tagger-0"]
    assert rows[0]["metrics"]["f1"] == 0.6 and rows[0]["mention_types"] == ["Disease"] and rows[0]["dictionary"] == "spans"
    activated = api.post(f"/api/detectors/{first.pk}/activate/")
    assert activated.status_code == 200 and activated.json()["state"] == "active"
    assert api.post(f"/api/detectors/{second.pk}/activate/").json()["state"] == "active"
    assert api.get(f"/api/detectors/{first.pk}/").json()["state"] == "retired"
    shutil.rmtree(first.artifact_path)
    refused = api.post(f"/api/detectors/{first.pk}/activate/")
    assert refused.status_code == 400 and "is missing" in refused.json()["detail"]
    assert api.post(f"/api/detectors/{second.pk}/retire/").json()["state"] == "retired"
    assert api.post("/api/detectors/999999/activate/").status_code == 404


@pytest.mark.django_db
def test_the_models_page_lists_detectors_and_admins_activate_them(tagger_folder: Path, tmp_path: Path, client, alice, bob) -> None:  # type: ignore[no-untyped-def]
    first, second = _versions(tagger_folder, tmp_path)
    assert client.post(f"/training/detectors/{first.pk}/activate/").status_code == 302  # to the login page
    client.force_login(bob)
    assert client.post(f"/training/detectors/{first.pk}/activate/").status_code == 403
    assert DetectorVersion.objects.get(pk=first.pk).state == "ready"

    client.force_login(alice)
    page = client.get("/training/models/").content.decode()
    assert 'id="detector-table"' in page and "spans-tagger-0" in page and "0.600" in page and "0.800" in page
    assert page.count(">Activate</button>") == 2
    done = client.post(f"/training/detectors/{first.pk}/activate/", follow=True)
    assert "Detector spans-tagger-0 now finds the mentions" in done.content.decode()
    page = client.get("/training/models/").content.decode()
    assert page.count(">Activate</button>") == 1 and page.count(">Retire</button>") == 1
    assert '<span class="badge badge-primary">Active</span>' in page
    client.post(f"/training/detectors/{second.pk}/activate/")
    assert list(DetectorVersion.objects.order_by("pk").values_list("state", flat=True)) == ["retired", "active"]
    client.post(f"/training/detectors/{second.pk}/retire/")
    assert DetectorVersion.objects.filter(state="active").count() == 0
