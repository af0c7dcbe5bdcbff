"""Index builds, evaluations and the linker a process serves each encode where the device settings say
(webapp.linking.devices over linker.device.choose_device): a build says its device and batch in its log and records
them in the artifact's config; a served linker stays on the CPU by default; a malformed setting stops start-up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.integration.conftest import PROJECT_ROOT
from webapp.linking.devices import batch_device, serving_device
from webapp.linking.models import EncoderModel, IndexVersion
from webapp.linking.registry import forget_all, load_linker
from webapp.training import services
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, Name

pytestmark = pytest.mark.django_db

CONCEPTS = {"D:01": ("Asthma", "Bronchial asthma"), "D:02": ("Gout", "Podagra"), "D:03": ("Migraine", "Sick headache")}


def _version() -> DictionaryVersion:
    dictionary = Dictionary.objects.create(slug="devices", title="Devices")
    version = DictionaryVersion.objects.create(dictionary=dictionary, release="1", source_format="medic", checksum="d" * 64)
    for cid, names in CONCEPTS.items():
        concept = Concept.objects.create(version=version, concept_id=cid, preferred_name=names[0])
        Name.objects.bulk_create([Name(concept=concept, text=n, normalized=n.lower(), is_preferred=i == 0)
                                  for i, n in enumerate(names)])
    return version


def _minilm() -> EncoderModel:
    from linker.encoders.transformer import default_base_model

    folder = Path(default_base_model()).resolve()
    return EncoderModel.objects.create(name="zero-shot-minilm", method=EncoderModel.Method.ZERO_SHOT,
                                       base_model=str(folder), artifact_path=str(folder))


def test_served_linkers_stay_on_the_cpu_by_default_and_batch_work_follows_linker_device(settings) -> None:  # type: ignore[no-untyped-def]
    assert settings.LINKER_SERVING_DEVICE == "cpu"
    assert serving_device() == torch.device("cpu")
    settings.LINKER_DEVICE = "cpu"
    assert batch_device() == torch.device("cpu")
    settings.LINKER_DEVICE = "auto"
    assert batch_device() == torch.device("cuda" if torch.cuda.is_available() else "cpu")


def test_an_index_build_says_where_it_encodes_and_records_it(settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings.ARTIFACT_ROOT = tmp_path
    settings.LINKER_DEVICE = "cpu"
    index = services.create_index_version(_version(), _minilm())
    said: list[str] = []
    index = services.build_index(index, progress=said.append)
    assert index.state == IndexVersion.State.READY, index.error
    assert "encoding names on cpu, 64 a batch" in said
    config = json.loads((Path(index.artifact_path) / "config.json").read_text())
    assert config["metadata"]["encode_device"] == "cpu"
    assert config["metadata"]["encode_batch_size"] == 64
    forget_all()
    served = load_linker(index)
    assert served.encoder is not None and served.encoder.encode_device == torch.device("cpu")  # type: ignore[union-attr]
    forget_all()


def _start(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LINKER_")}
    return subprocess.run([sys.executable, "-c", "import django; django.setup()"], cwd=PROJECT_ROOT,
                          env={**clean, "DJANGO_SETTINGS_MODULE": "webapp.settings", **env},
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("name", "value"), [("LINKER_DEVICE", "gpu"), ("LINKER_SERVING_DEVICE", "cuda:one")])
def test_a_malformed_device_setting_stops_start_up(name: str, value: str) -> None:
    result = _start(**{name: value})
    assert result.returncode != 0
    assert f"{name}={value!r} is not a device (use auto, cpu, cuda or cuda:N)" in result.stderr
