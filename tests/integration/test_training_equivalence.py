"""``python -m linker train`` and a web training run are one recipe: on the same tiny data they train the
same artifact (config, figures, concept prior, rankings)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from linker.cli import main
from linker.linker import Linker
from tests.integration.test_training_runs import CONCEPTS, DOCS, _collection, _dictionary
from webapp.training.execution import run_training
from webapp.training.models import TrainingRun
from webapp.training.runs import start_run

# The student (3 layers, fine-tuned whole) for 2 epochs on 4 queries: seconds on a CPU, one thread for equal sums.
SETTINGS = {"train_scope": "student", "epochs": 2, "topk": 4, "batch_size": 4, "max_queries": 4, "num_threads": 1,
            "skip_pretrain": True}
CLI_FLAGS = ["--scope", "student", "--epochs", "2", "--topk", "4", "--batch-size", "4", "--max-queries", "4",
             "--threads", "1", "--skip-pretrain"]
# What only says where the inputs came from (files, or the run) or how long it took.
PROVENANCE = {"dictionary", "train", "training_run"}


def _write_files(folder: Path) -> tuple[Path, Path]:
    # In the database's order (by concept id): the order of the names table is the order of the sums.
    dictionary = folder / "mini.txt"
    dictionary.write_text("".join(f"{cid}||{'|'.join(CONCEPTS[cid])}\n" for cid in sorted(CONCEPTS)), encoding="utf-8")
    train = folder / "gold.pubtator"
    blocks = []
    for pmid, text, mentions in DOCS:
        lines = [f"{pmid}|t|{text}", f"{pmid}|a|"]
        for mention, cid in mentions:
            start = text.index(mention)
            lines.append(f"{pmid}\t{start}\t{start + len(mention)}\t{mention}\tDisease\t{cid}")
        blocks.append("\n".join(lines) + "\n")
    train.write_text("\n".join(blocks) + "\n", encoding="utf-8")
    return dictionary, train


def _figures(value: Any, path: str = "") -> dict[str, Any]:
    """Flattened ``{path: value}`` without provenance and timings (keys ending in ``_s``)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key not in PROVENANCE and not key.endswith("_s"):
                out |= _figures(item, f"{path}/{key}")
        return out
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in _figures(item, f"{path}[{i}]").items()}
    return {path: value}


def _assert_same(cli: Any, web: Any) -> None:
    cli_figures, web_figures = _figures(cli), _figures(web)
    assert sorted(cli_figures) == sorted(web_figures)
    for key, value in cli_figures.items():
        expected = pytest.approx(value, rel=1e-4, abs=1e-6) if isinstance(value, float) else value
        assert web_figures[key] == expected, key


@pytest.mark.slow
@pytest.mark.django_db
def test_the_cli_and_a_web_run_train_the_same_artifact(settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    dictionary_file, train_file = _write_files(tmp_path)
    cli_out = tmp_path / "cli-artifact"
    assert main(["train", "--dictionary", str(dictionary_file), "--train", str(train_file), "--out", str(cli_out),
                 *CLI_FLAGS]) == 0
    capsys.readouterr()

    dictionary = _dictionary()
    run = start_run(dictionary, [_collection(dictionary)], SETTINGS, send=False)
    assert run_training(run.pk) == TrainingRun.State.SUCCEEDED, TrainingRun.objects.get(pk=run.pk).error
    web_out = Path(TrainingRun.objects.get(pk=run.pk).index_version.artifact_path)

    cli_config, web_config = (json.loads((out / "config.json").read_text()) for out in (cli_out, web_out))
    assert cli_config["metadata"]["training"]["train_scope"] == "student"
    _assert_same(cli_config, web_config)
    cli_report, web_report = (json.loads((out / "training_report.json").read_text()) for out in (cli_out, web_out))
    assert cli_report["training_queries"] == 4 and len(cli_report["biosyn"]) == 2
    _assert_same(cli_report, web_report)
    assert json.loads((cli_out / "prior.json").read_text()) == json.loads((web_out / "prior.json").read_text())

    queries = ["wheezing asthma", "raised blood pressure", "heart attack", "adult diabetes"]
    cli_ranked, web_ranked = (Linker.load(out).link_mentions(queries, k=3) for out in (cli_out, web_out))
    for cli_candidates, web_candidates in zip(cli_ranked, web_ranked, strict=True):
        assert [c.concept_id for c in cli_candidates] == [c.concept_id for c in web_candidates]
        assert [c.score for c in web_candidates] == pytest.approx([c.score for c in cli_candidates], rel=1e-4)
