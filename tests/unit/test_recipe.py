"""The recipe's table of methods, its atomic artifact folder, the concept prior's one definition, and how a
BioSyn config resolves its scope."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from linker import recipe
from linker.data import iter_pubtator
from linker.dictionary import NameTable
from linker.recipe import (
    METHODS,
    BioSynRecipeConfig,
    LatteRecipeConfig,
    Method,
    TrainingCallbacks,
    TrainingInputs,
    prior_counts,
)

TRAIN = """\
1|t|Adult onset diabetes and breast carcinoma.
1|a|Kahler disease and NIDDM were also seen.
1\t0\t20\tAdult onset diabetes\tDisease\tD003924
1\t25\t41\tbreast carcinoma\tDisease\tD001943
1\t43\t57\tKahler disease\tDisease\tD009101
1\t62\t67\tNIDDM\tDisease\tMESH:D003924

"""


@dataclass
class _EchoConfig:
    fail: bool = False


def _echo(inputs: TrainingInputs, config: _EchoConfig, callbacks: TrainingCallbacks, folder: Path) -> recipe.Report:
    """A method that writes a config.json and a checkpoint, and fails when asked to."""
    callbacks.phase("echo")
    (folder / "checkpoints" / "epoch-1").mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"pairs": len(inputs.pairs)}))
    if config.fail:
        raise RuntimeError("boom")
    return {"pairs": len(inputs.pairs)}


@pytest.fixture
def echo() -> Iterator[Method[_EchoConfig]]:
    method = recipe.register(Method(name="echo", config_class=_EchoConfig, train=_echo))
    yield method
    del METHODS["echo"]


def _inputs(table: NameTable, out: Path) -> TrainingInputs:
    return TrainingInputs(table=table, pairs=[("kahler disease", "D009101")], concept_counts={}, out=out)


def test_the_methods_are_in_the_table_and_a_name_is_registered_once(echo: Method[_EchoConfig]) -> None:
    from linker.methods.hiprbert_params import HiPrBERTRecipeConfig

    assert METHODS["biosyn"].config_class is BioSynRecipeConfig
    assert METHODS["latte"].config_class is LatteRecipeConfig
    assert METHODS["hiprbert"].config_class is HiPrBERTRecipeConfig
    assert sorted(METHODS) == ["biosyn", "bne", "dan", "echo", "fasttext", "hiprbert", "latte", "tagger"]
    with pytest.raises(ValueError, match="already registered"):
        recipe.register(echo)
    with pytest.raises(ValueError, match="unknown training method .nope.; known: biosyn, bne, dan, echo, fasttext, "
                                         "hiprbert, latte, tagger"):
        recipe.get_method("nope")


def test_an_artifact_appears_complete_without_checkpoints(echo: Method[_EchoConfig], tiny_table: NameTable, tmp_path: Path) -> None:
    phases: list[str] = []
    folder, report = recipe.train("echo", _inputs(tiny_table, tmp_path / "out"), callbacks=TrainingCallbacks(on_phase=phases.append))
    assert folder == tmp_path / "out" and phases == ["echo"]
    assert report == {"method": "echo", "pairs": 1}
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "training_report.json"]
    assert json.loads((folder / "training_report.json").read_text()) == report
    assert not (tmp_path / "out.partial").exists()
    # Training again replaces the earlier artifact.
    recipe.train("echo", _inputs(tiny_table, folder))
    assert (folder / "config.json").exists()


def test_a_failed_training_leaves_no_folder(echo: Method[_EchoConfig], tiny_table: NameTable, tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="boom"):
        recipe.train("echo", _inputs(tiny_table, tmp_path / "out"), _EchoConfig(fail=True))
    assert list(tmp_path.iterdir()) == []


def test_a_folder_that_is_not_an_artifact_is_never_replaced(echo: Method[_EchoConfig], tiny_table: NameTable, tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "thesis.tex").write_text("precious")
    with pytest.raises(FileExistsError, match="not a linker artifact"):
        recipe.train("echo", _inputs(tiny_table, tmp_path / "notes"))
    assert (tmp_path / "notes" / "thesis.tex").read_text() == "precious"


def test_a_log_written_into_the_output_folder_joins_the_artifact(echo: Method[_EchoConfig], tiny_table: NameTable, tmp_path: Path) -> None:
    """``--log OUT/progress.jsonl`` (as bench/linking.py --train gives it): the log appears in OUT while the
    method trains, and OUT is then no longer empty; the artifact is published with the log inside."""
    out = tmp_path / "out"
    out.mkdir()

    def log(phase: str) -> None:
        with open(out / "progress.jsonl", "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"phase": phase}) + "\n")

    folder, _ = recipe.train("echo", _inputs(tiny_table, out), callbacks=TrainingCallbacks(on_phase=log))
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "progress.jsonl", "training_report.json"]
    assert json.loads((folder / "progress.jsonl").read_text()) == {"phase": "echo"}
    assert not (tmp_path / "out.partial").exists()


def test_a_refusal_after_training_keeps_what_was_trained(echo: Method[_EchoConfig], tiny_table: NameTable, tmp_path: Path) -> None:
    out = tmp_path / "out"
    recipe.train("echo", _inputs(tiny_table, out))
    # While the next training runs, the folder stops being an artifact (its config.json goes): it is not replaced,
    # and the new artifact is not thrown away either.
    callbacks = TrainingCallbacks(on_phase=lambda _: (out / "config.json").unlink())
    with pytest.raises(FileExistsError, match=r"not a linker artifact: refusing to replace it; the trained artifact is kept at .*out\.partial"):
        recipe.train("echo", _inputs(tiny_table, out), callbacks=callbacks)
    assert (tmp_path / "out.partial" / "config.json").exists()
    assert (out / "training_report.json").exists()


def test_a_config_of_another_method_is_refused(echo: Method[_EchoConfig], tiny_table: NameTable, tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="echo takes a _EchoConfig, not a BioSynRecipeConfig"):
        recipe.train("echo", _inputs(tiny_table, tmp_path / "out"), BioSynRecipeConfig())


def test_the_prior_counts_every_annotated_mention_and_each_curated_one(tiny_table: NameTable, tmp_path: Path) -> None:
    path = tmp_path / "train.txt"
    path.write_text(TRAIN, encoding="utf-8")
    docs = list(iter_pubtator(path))
    # Two mentions of type 2 diabetes (two spellings of its id), one each of the others; a curated relink to
    # multiple myeloma counts once more, an unknown id not at all.
    assert prior_counts(docs, tiny_table) == {"D003924": 2, "D001943": 1, "D009101": 1}
    assert prior_counts(docs, tiny_table, curated=["D009101", "D999999"]) == {"D003924": 2, "D001943": 1, "D009101": 2}
    assert prior_counts(docs, tiny_table, mention_types={"Chemical"}) == {}


def test_a_biosyn_config_resolves_its_scope_against_the_device() -> None:
    student = BioSynRecipeConfig(device="cpu", feature_cache="/tmp/features").resolve()
    assert (student.scope, student.epochs, student.lr, student.layers) == ("student", 1, 2e-5, (0, 2, 5))
    assert student.biosyn.train_scope == student.pretrain.train_scope == "student"
    assert student.biosyn.feature_cache is None  # only a frozen transformer's features are cached
    head = BioSynRecipeConfig(scope="head", device="cpu", epochs=3, feature_cache="/tmp/features").resolve()
    assert (head.biosyn.epochs, head.biosyn.lr, head.pretrain.epochs) == (3, 1e-5, 3)
    assert head.biosyn.feature_cache == head.pretrain.feature_cache == "/tmp/features"
    assert BioSynRecipeConfig(scope="auto", device="cuda").resolve().scope == "full"
    with pytest.raises(ValueError, match="train_scope"):
        BioSynRecipeConfig(scope="tiny", device="cpu").resolve()
