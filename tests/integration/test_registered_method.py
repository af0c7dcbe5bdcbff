"""A training method registered in linker/ alone (its parameters one dataclass, one registration line) is offered by
the start form with its fields, taken by the API with its parameters (a bad value refused by name) and shown on the run
page's parameter table: the web app has not a line for it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from linker import recipe
from linker.methods.base import DETECTOR, Method
from linker.methods.params import param
from webapp.corpus.models import Collection
from webapp.training.models import TrainingRun
from webapp.vocab.models import Dictionary, DictionaryVersion

pytestmark = pytest.mark.django_db


@dataclass
class TinyConfig:
    """The tiny method's parameters, which are its config too."""

    size: int = param(4, "Tiny size", "How many things it learns.", low=1, high=64, main=True, form="tiny_size")
    flavour: str = param("plain", "Flavour", "What it tastes of.", choices=(("plain", "plain"), ("salty", "salty (more)")),
                         shown=(("salty", "salty, as asked"),), main=True, form=True)
    patience: int = param(2, "Patience", "Epochs without progress before it stops.", low=1)


def _never(*args: Any) -> dict[str, Any]:
    raise AssertionError("the tiny method is registered, not trained, here")


TINY = Method(name="tiny", config_class=TinyConfig, train=_never, label="Tiny (a test's method)",
              summary="Tiny: a method only this test registers", description="learns a few tiny things", output=DETECTOR)


@pytest.fixture
def tiny() -> Iterator[Method[TinyConfig]]:
    recipe.register(TINY)
    yield TINY
    recipe.unregister(TINY.name)


@pytest.fixture
def world(db):  # type: ignore[no-untyped-def]
    d = Dictionary.objects.create(slug="mini", title="Mini")
    DictionaryVersion.objects.create(dictionary=d, release="1", source_format="medic", checksum="t" * 64)
    Collection.objects.create(slug="gold", title="Gold", dictionary=d, has_gold=True)
    return d


def _api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_the_start_form_offers_it_with_its_fields(tiny, world, alice_client: Client) -> None:  # type: ignore[no-untyped-def]
    page = alice_client.get("/training/runs/new/?method=tiny").content.decode()
    assert re.search(r'<input type="radio" name="method" value="tiny" id="id_method_\d+" checked>', page)
    assert "Tiny: a method only this test registers" in page
    group = re.search(r'<fieldset class="method-fields" data-methods="tiny">.*?</fieldset>', page, re.S)
    assert group is not None and "<legend>Tiny</legend>" in group.group() and "Learns a few tiny things." in group.group()
    assert re.search(r'<input type="number" name="tiny_size" value="4" min="1" max="64"', group.group())
    assert '<option value="salty">salty (more)</option>' in group.group() and "What it tastes of." in group.group()
    assert 'name="patience"' not in group.group()  # not declared for a form: the API sets it
    assert '[value="tiny"]:checked) [data-methods]:not([data-methods~="tiny"])' in page  # the others' fields hidden

    queued = alice_client.post("/training/runs/new/", {"method": "tiny", "dictionary": "mini", "collections": ["gold"],
                                                       "tiny_size": 9, "flavour": "salty"})
    assert queued.status_code == 302, queued.context["form"].errors
    run = TrainingRun.objects.get()
    assert (run.method, run.params) == ("tiny", {"method": "tiny", "size": 9, "flavour": "salty", "patience": 2})
    refused = alice_client.post("/training/runs/new/", {"method": "tiny", "dictionary": "mini", "collections": ["gold"],
                                                        "tiny_size": 65})
    assert refused.status_code == 400 and refused.context["form"].errors["tiny_size"]
    assert TrainingRun.objects.count() == 1


def test_the_api_takes_its_params_and_refuses_a_bad_one_by_name(tiny, world, alice) -> None:  # type: ignore[no-untyped-def]
    client = _api(alice)
    body = {"dictionary": "mini", "collections": ["gold"], "method": "tiny"}
    started = client.post("/api/training-runs/", body | {"params": {"size": 12, "patience": 5}}, format="json")
    assert started.status_code == 202, started.json()
    assert (started.json()["method"], started.json()["params"]) == (
        "tiny", {"method": "tiny", "size": 12, "flavour": "plain", "patience": 5})
    for params, message in [({"size": 100}, "size must be between 1 and 64"),
                            ({"flavour": "sweet"}, "flavour must be one of plain, salty"),
                            ({"patience": "long"}, "patience must be a number"),
                            ({"sise": 3}, "unknown training parameter 'sise' for tiny")]:
        refused = client.post("/api/training-runs/", body | {"params": params}, format="json")
        assert refused.status_code == 400 and refused.json() == {"detail": message}
    assert TrainingRun.objects.count() == 1
    schema = client.get("/api/schema/", {"format": "json"})  # the API's own description lists it and its parameters
    assert schema.status_code == 200 and "tiny: Tiny (a test's method)" in schema.content.decode()
    assert "tiny: size, flavour, patience" in schema.content.decode()


def test_the_run_page_shows_its_parameters(tiny, world, alice, alice_client: Client) -> None:  # type: ignore[no-untyped-def]
    started = _api(alice).post("/api/training-runs/", {"dictionary": "mini", "collections": ["gold"], "method": "tiny",
                                                       "params": {"flavour": "salty"}}, format="json")
    assert started.status_code == 202, started.json()
    page = alice_client.get(f"/training/runs/{started.json()['id']}/")
    assert page.status_code == 200
    html = page.content.decode()
    main = re.search(r'<table class="data params" id="run-params">.*?</table>', html, re.S)
    assert main is not None
    rows = re.findall(r'<tr data-param="(\w+)"><td>([^<]+)</td><td class="value">([^<]+)', main.group())
    assert rows == [("size", "Tiny size", "4 "), ("flavour", "Flavour", "salty, as asked")]
    assert 'data-param="patience"' in html  # under "every other parameter"
    assert "Tiny (a test&#x27;s method)" in html  # the run's method by its label: TrainingRun.method's choices are the table's


def test_it_is_gone_once_unregistered(world, alice_client: Client) -> None:  # type: ignore[no-untyped-def]
    recipe.register(TINY)
    recipe.unregister(TINY.name)
    page = alice_client.get("/training/runs/new/").content.decode()
    assert 'value="tiny"' not in page and 'name="tiny_size"' not in page
