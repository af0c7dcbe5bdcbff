"""The linker's top-1 confidence: Platt scaling on held-out gold and NIL mentions, the NIL threshold, the
artifact round trip and the CLI (issue #15: "the linker's top-1 calibrated probability")."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from linker.calibration import (
    Calibration,
    CalibrationExample,
    fit_calibration,
    labelled_examples,
    part_features,
    precision_above,
    reliability,
)
from linker.config import LinkerConfig
from linker.linker import Linker
from linker.retrieval import Candidate, RetrievalConfig


def _cand(cid: str, name: str, score: float) -> Candidate:
    return Candidate(cid, name, score, float("nan"), score / 2)


def test_features_are_the_top1_score_its_margin_over_another_concept_and_an_exact_name() -> None:
    ranked = [_cand("D1", "Diabetes", 9.0), _cand("D1", "DM", 8.5), _cand("D2", "Diabetes insipidus", 6.0)]
    assert part_features("diabetes", ranked) == [9.0, 3.0, 0.0, 4.5, 1.0]  # margin to D2, not to D1's 2nd name
    assert part_features("diabetic", ranked)[-1] == 0.0
    assert part_features("anything", []) == [0.0] * 5


def _examples(n: int, seed: int = 0) -> list[CalibrationExample]:
    """Right top-1s come with larger margins than wrong ones: a calibration must learn it."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        right = rng.random() < 0.7
        margin = rng.gauss(3.0 if right else 0.5, 1.0)
        out.append(CalibrationExample((10.0 + margin, margin, 0.0, 1.0, 0.0), right))
    return out


def test_a_fitted_calibration_is_monotone_in_the_margin_and_well_calibrated() -> None:
    examples = _examples(400)
    calibration = fit_calibration(examples)
    low = calibration.probability((10.0, 0.0, 0.0, 1.0, 0.0))
    high = calibration.probability((14.0, 4.0, 0.0, 1.0, 0.0))
    assert 0.0 < low < 0.5 < high < 1.0
    held_out = _examples(400, seed=1)
    figures = reliability([calibration.probability(e.features) for e in held_out], [e.right for e in held_out])
    assert figures["ece"] < 0.08 and figures["brier"] < 0.2
    assert calibration.nil_threshold == 0.0  # no NIL examples: never says NIL
    auto = precision_above([calibration.probability(e.features) for e in held_out], [e.right for e in held_out], 0.9)
    assert auto["precision"] >= 0.9 and 0.0 < auto["accepted"] < 1.0


def test_nil_examples_set_a_threshold_below_which_the_linker_says_no_concept() -> None:
    examples = _examples(300)
    nil = [CalibrationExample((10.0 + m, m, 0.0, 1.0, 0.0), right=False, nil=True) for m in (-1.0, -0.5, 0.0) * 40]
    calibration = fit_calibration(examples + nil)
    assert 0.0 < calibration.nil_threshold < 1.0
    assert calibration.says_nil(calibration.probability((9.0, -1.0, 0.0, 1.0, 0.0)))
    assert not calibration.says_nil(calibration.probability((14.0, 4.0, 0.0, 1.0, 0.0)))


def test_too_few_or_one_sided_examples_are_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="at least 20 examples"):
        fit_calibration(_examples(10))
    with pytest.raises(ValueError, match=r"\(30 right\)"):
        fit_calibration([CalibrationExample((1.0, 1.0, 0.0, 0.0, 1.0), True)] * 30)


def test_labelled_examples_are_per_part_and_right_when_the_top1_is_gold() -> None:
    ranked = [[[_cand("D1", "a", 3.0)], [_cand("D2", "b", 2.0)]], [[_cand("D3", "c", 1.0)]]]
    examples = labelled_examples([["a", "x"], ["z"]], ranked, [[{"D1"}, {"D9"}], [{"D3"}]])
    assert [e.right for e in examples] == [True, False, True]


def test_a_calibrated_linker_keeps_its_calibration_through_save_and_load(tiny_dictionary_file: Path,
                                                                         tmp_path: Path) -> None:
    from linker.dictionary_formats import iter_dnorm_dictionary

    linker = Linker.build(list(iter_dnorm_dictionary(tiny_dictionary_file)), None,
                          LinkerConfig(retrieval=RetrievalConfig(mode="sparse")))
    assert linker.confidences([["diabetes"]], [[[]]]) == [None]  # uncalibrated: no figure
    linker.calibration = fit_calibration(_examples(100))
    linker.save(tmp_path / "a")
    loaded = Linker.load(tmp_path / "a")
    assert loaded.calibration == linker.calibration
    queries = loaded.queries_for(["breast and ovarian cancer", "diabetes"])
    ranked = loaded.link_queries(queries, 5)
    both, single = loaded.confidences(queries, ranked)
    assert both is not None and single is not None
    parts = [loaded.calibration.probability(part_features(q, c, loaded.preprocessor.normalize))
             for q, c in zip(queries[0], ranked[0], strict=True)]
    assert both == pytest.approx(parts[0] * parts[1])  # a composite is right only if every part is


def test_the_cli_calibrates_an_artifact_on_gold_and_nil_mentions(tiny_dictionary_file: Path, tmp_path: Path) -> None:
    from linker.cli import main
    from linker.dictionary_formats import iter_dnorm_dictionary

    Linker.build(list(iter_dnorm_dictionary(tiny_dictionary_file)), None,
                 LinkerConfig(retrieval=RetrievalConfig(mode="sparse"))).save(tmp_path / "art")
    # Gold mentions the sparse linker gets right (names) and wrong (a word shared by two concepts).
    lines = []
    texts = [("breast cancer", "D001943"), ("ovarian cancer", "D010051"), ("diabetes", "D003920"),
             ("myeloma", "D009101"), ("huntington chorea", "D006816"), ("neoplasms", "D015179"),
             ("cancer", "D009101"), ("tumor", "D010051")]
    for i in range(12):
        for j, (text, cid) in enumerate(texts):
            pmid = f"{i}{j}"
            lines += [f"{pmid}|t|{text}", f"{pmid}|a|", f"{pmid}\t0\t{len(text)}\t{text}\tDisease\t{cid}", ""]
    (tmp_path / "gold.txt").write_text("\n".join(lines), encoding="utf-8")
    (tmp_path / "nil.txt").write_text("heart failure\nzz unknown syndrome\n", encoding="utf-8")
    assert main(["calibrate", "--artifact", str(tmp_path / "art"), "--gold", str(tmp_path / "gold.txt"),
                 "--nil", str(tmp_path / "nil.txt")]) == 0
    saved = json.loads((tmp_path / "art" / "calibration.json").read_text())
    # 5 of the 8 texts are right 12 times each: "neoplasms", "cancer" and "tumor" name several concepts.
    assert saved["fitted_on"] == {"examples": 98, "right": 60, "nil": 2}
    assert Calibration.load(tmp_path / "art") is not None
    (tmp_path / "one.txt").write_text("breast cancer\n", encoding="utf-8")
    assert main(["link", "--artifact", str(tmp_path / "art"), str(tmp_path / "one.txt"),
                 "--output", str(tmp_path / "out.jsonl")]) == 0
    record = json.loads((tmp_path / "out.jsonl").read_text())
    assert 0.0 < record["confidence"] <= 1.0 and record["nil"] is False
