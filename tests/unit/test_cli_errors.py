"""``python -m linker``: a fault in the user's input ends a command with one line naming it and exit status 2.

A new user's first mistakes (a path mistyped, a base encoder given where a linker artifact is needed, a dictionary
without a hierarchy for hierarchy pre-training) must read as a message, not as a traceback to scroll through."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from linker.cli import main


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err  # the message, no traceback
    return lines[0]


def test_a_missing_artifact_folder_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = tmp_path / "gold.txt"
    gold.write_text("", encoding="utf-8")
    assert main(["evaluate", "--artifact", str(tmp_path / "nowhere"), "--eval", str(gold)]) == 2
    assert _error(capsys) == f"python -m linker evaluate: error: {tmp_path / 'nowhere'}: no such artifact folder"


def test_a_model_folder_is_not_taken_for_a_linker(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "base"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"model_type": "bert"}), encoding="utf-8")
    assert main(["link", "--artifact", str(model), str(tmp_path / "mentions.txt")]) == 2
    message = _error(capsys)
    assert message.startswith(f"python -m linker link: error: {model}: a transformer model folder (a base encoder)")
    assert "build-index --encoder" in message

    (tmp_path / "empty").mkdir()
    assert main(["link", "--artifact", str(tmp_path / "empty"), str(tmp_path / "mentions.txt")]) == 2
    assert _error(capsys).endswith(f"{tmp_path / 'empty'}: not a linker artifact (no config.json)")


def test_a_missing_input_file_is_named_without_errno(tiny_dictionary_file: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build-index", "--dictionary", str(tmp_path / "no.tsv"), "--out", str(tmp_path / "o"),
                 "--sparse-only"]) == 2
    message = _error(capsys)
    assert message.startswith("python -m linker build-index: error: ") and str(tmp_path / "no.tsv") in message
    assert "Errno" not in message and not (tmp_path / "o").exists()


def test_a_dictionary_without_hierarchy_is_refused_for_hierarchy_pretraining(
    tiny_dictionary_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["pretrain-hierarchy", "--dictionary", str(tiny_dictionary_file), "--out", str(tmp_path / "h")]) == 2
    message = _error(capsys)
    assert message.startswith("python -m linker pretrain-hierarchy: error: dictionary 'tiny_medic' has no hierarchy")
    assert not (tmp_path / "h").exists()


def test_linker_traceback_keeps_the_exception(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LINKER_TRACEBACK", "1")
    with pytest.raises(FileNotFoundError, match="no such artifact folder"):
        main(["evaluate", "--artifact", str(tmp_path / "nowhere"), "--eval", str(tmp_path / "gold.txt")])
