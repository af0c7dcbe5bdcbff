"""``python -m linker train`` end to end on files the test writes: the CPU's default scope is the student.

The CLI only reads files and calls :func:`linker.recipe.train`; tests/integration/test_training_equivalence.py
shows that a web training run trains the same artifact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from linker.cli import main
from linker.linker import Linker

TRAIN = """\
1|t|Adult onset diabetes and breast carcinoma.
1|a|Kahler disease was also seen.
1\t0\t20\tAdult onset diabetes\tDisease\tD003924
1\t25\t41\tbreast carcinoma\tDisease\tD001943
1\t43\t57\tKahler disease\tDisease\tD009101

"""


def test_train_on_a_cpu_defaults_to_the_student_and_writes_a_working_artifact(
    tiny_dictionary_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train = tmp_path / "train.txt"
    train.write_text(TRAIN, encoding="utf-8")
    out = tmp_path / "artifact"
    assert main(["train", "--dictionary", str(tiny_dictionary_file), "--train", str(train), "--out", str(out),
                 "--skip-pretrain", "--threads", "1"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["train_scope"] == "student" and report["encoder_layers"] == 3 and report["training_queries"] == 3
    assert (report["method"], report["epochs"], report["lr"]) == ("biosyn", 1, 2e-5)  # the student's defaults
    # The artifact appeared whole: its report written, its checkpoints gone, no partial folder left.
    assert (out / "training_report.json").exists() and not (out / "checkpoints").exists()
    assert not (tmp_path / "artifact.partial").exists()
    linker = Linker.load(out)
    assert linker.encoder is not None and linker.encoder.num_layers == 3
    # The training mentions were merged into the artifact's dictionary.
    [candidates] = linker.link_mentions(["kahler disease"])
    assert candidates[0].concept_id == "D009101"


def test_an_unknown_scope_is_refused(tiny_dictionary_file: Path, tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        main(["train", "--dictionary", str(tiny_dictionary_file), "--train", str(tmp_path / "x"), "--out",
              str(tmp_path / "o"), "--scope", "tiny"])


def test_the_bne_flags_reach_its_config_and_other_methods_refuse_them() -> None:
    from linker.cli.configs import fast_config
    from linker.cli.parser import build_parser
    from linker.encoders.bne import FAST_BNE, BNEConfig

    args = build_parser().parse_args(["train", "--method", "bne", "--dictionary", "d", "--train", "t", "--out", "o",
                                       "--bne-size", "fast", "--epoch-names", "512", "--negatives", "16"])
    config = fast_config(args)
    assert (config.bne, config.epoch_names, config.negatives) == (FAST_BNE, 512, 16)
    paper = fast_config(build_parser().parse_args(["train", "--method", "bne", "--dictionary", "d", "--train", "t",
                                                     "--out", "o"]))
    assert (paper.bne, paper.epoch_names, paper.negatives) == (BNEConfig(), 0, 1)
    for flags in (["--bne-size", "fast"], ["--negatives", "4"]):
        dan = build_parser().parse_args(["train", "--method", "dan", "--dictionary", "d", "--train", "t", "--out", "o",
                                          *flags])
        with pytest.raises(SystemExit, match="dan does not take"):
            fast_config(dan)


def test_pretrain_hierarchy_takes_a_seed_so_a_run_can_be_drawn_again() -> None:
    from linker.cli.configs import hierarchy_config
    from linker.cli.parser import build_parser
    from linker.train import TrainerConfig

    base = ["pretrain-hierarchy", "--dictionary", "d.obo", "--out", "o"]
    assert hierarchy_config(build_parser().parse_args(base)).pretrain.seed == TrainerConfig.seed
    assert hierarchy_config(build_parser().parse_args([*base, "--seed", "14"])).pretrain.seed == 14
