"""The mention tagger: a real MiniLM token classifier trained for a few steps on a corpus written here, saved and
loaded back, reading a long text through windows; its registration and its two CLI commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from linker.data import GoldMention, PubTatorDocument
from linker.detect.encoding import encode_text, window_starts
from linker.detect.tagger import Tagger

SENTENCES = [
    ("Breast cancer is common in women.", ["Breast cancer"]),
    ("Patients with diabetes were enrolled.", ["diabetes"]),
    ("Huntington disease is inherited.", ["Huntington disease"]),
    ("We studied ovarian cancer and diabetes in mice.", ["ovarian cancer", "diabetes"]),
    ("The gene was sequenced in all samples.", []),
    ("Colorectal cancer risk rises with age.", ["Colorectal cancer"]),
    ("No effect was seen on the enzyme.", []),
    ("Multiple myeloma responded to the drug.", ["Multiple myeloma"]),
]


def _doc(i: int, text: str, mentions: list[str]) -> PubTatorDocument:
    gold = tuple(GoldMention(text.index(m), text.index(m) + len(m), m, "Disease", "D1", (("D1",),)) for m in mentions)
    return PubTatorDocument(pmid=str(i), title=text, abstract="", mentions=gold)


DOCS = [_doc(i, text, mentions) for i, (text, mentions) in enumerate(SENTENCES)]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:  # type: ignore[type-arg]
    """A tagger trained through the recipe (about 30 steps on short windows), and its report."""
    import torch

    from linker.dictionary import NameTable
    from linker.recipe import TaggerRecipeConfig, TrainingInputs, train

    torch.set_num_threads(2)
    out = tmp_path_factory.mktemp("tagger") / "tagger"
    inputs = TrainingInputs(table=NameTable(), pairs=(), concept_counts={}, out=out, documents=DOCS,
                            dev_documents=DOCS[:4], mention_types=frozenset({"Disease"}), metadata={"spans": {"gold": 9}})
    config = TaggerRecipeConfig(epochs=15, lr=3e-4, batch_size=4, max_length=32, stride=8, warmup=0.0, device="cpu")
    folder, report = train("tagger", inputs, config)
    return folder, report


def test_the_tagger_is_a_registered_method() -> None:
    import linker.recipe

    assert "tagger" in linker.recipe.METHODS
    assert linker.recipe.get_method("tagger").config_class.__name__ == "TaggerRecipeConfig"


def test_the_artifact_is_one_folder_with_a_report(trained: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    folder, report = trained
    assert {"config.json", "tagger.json", "training_report.json", "model.safetensors", "tokenizer.json"} <= {
        p.name for p in folder.iterdir()}
    assert not folder.with_name("tagger.partial").exists()
    assert report["method"] == "tagger" and report["documents"] == 8 and report["spans"] == 7
    assert report["metadata"] == {"spans": {"gold": 9}}
    assert set(report["metrics"]) >= {"f1", "precision", "recall", "f1_overlap"}
    settings = json.loads((folder / "tagger.json").read_text())
    assert (settings["labels"], settings["max_length"], settings["stride"]) == (["O", "B", "I"], 32, 8)
    assert settings["mention_types"] == ["Disease"]


def test_it_learns_the_training_mentions(trained: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    folder, report = trained
    tagger = Tagger.load(folder, "cpu")
    texts = [text for text, _ in SENTENCES]
    found = tagger.predict(texts)
    assert [[s.text for s in spans] for spans in found] == [m for _, m in SENTENCES]
    assert all(s.source == "tagger" and 0.5 < s.score <= 1.0 for spans in found for s in spans)
    assert report["metrics"]["f1"] == 1.0


def test_save_and_load_give_the_same_spans(trained: tuple[Path, dict], tmp_path: Path) -> None:  # type: ignore[type-arg]
    folder, _ = trained
    tagger = Tagger.load(folder, "cpu")
    tagger.save(tmp_path / "copy")
    again = Tagger.load(tmp_path / "copy", "cpu")
    texts = ["Breast cancer and diabetes were studied.", "Nothing here.", ""]
    first, second = tagger.predict(texts), again.predict(texts, batch_size=1)
    assert [[(s.start, s.end, s.text) for s in spans] for spans in first] == [
        [(s.start, s.end, s.text) for s in spans] for spans in second]
    assert [s.score for spans in first for s in spans] == pytest.approx([s.score for spans in second for s in spans])
    assert (again.max_length, again.stride, again.mention_types) == (32, 8, ("Disease",))


def test_a_long_text_goes_through_windows_with_offsets_inside_it(trained: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    folder, _ = trained
    tagger = Tagger.load(folder, "cpu")
    sentence = "Patients with diabetes were enrolled. "
    text = sentence * 200  # ~1,400 tokens: about 60 windows of 30
    assert len(tagger.windows(tagger.encode(text))) > 50
    [spans] = tagger.predict([text], batch_size=16)
    assert all(0 <= s.start < s.end <= len(text) and text[s.start : s.end] == s.text for s in spans)
    assert [s.start for s in spans] == sorted(s.start for s in spans)
    assert sum(s.text == "diabetes" for s in spans) >= 190


def test_first_subtokens_belong_to_words_by_offsets() -> None:
    from transformers import AutoTokenizer

    from linker.encoders.transformer import default_base_model

    fast = AutoTokenizer.from_pretrained(default_base_model()).backend_tokenizer
    fast.no_padding()
    text = "Naïve BRCA1 carriers at 37°C"
    enc = encode_text(fast, text, piece_words=2)  # pieces of two words: tokens still line up with words
    words = [text[s:e] for s, e in enc.word_offsets()]
    assert words == ["Naïve", "BRCA1", "carriers", "at", "37", "°", "C"]
    owners = [w for w in enc.first if w >= 0]
    assert owners == sorted(set(owners))  # each word labelled by at most one token, in order
    assert {0, 1, 2, 3, 4} <= set(owners)


def test_window_starts_cover_every_token() -> None:
    assert window_starts(10, 30, 8) == [0]
    assert window_starts(100, 30, 8) == [0, 22, 44, 66, 70]
    starts = window_starts(1000, 30, 8)
    assert all(b - a <= 22 for a, b in zip(starts, starts[1:], strict=False)) and starts[-1] + 30 == 1000


def test_bad_settings_are_refused_with_their_name() -> None:
    from linker.methods.tagger import TaggerRecipeConfig

    with pytest.raises(ValueError, match="stride"):
        TaggerRecipeConfig(max_length=32, stride=30)
    with pytest.raises(ValueError, match="epochs"):
        TaggerRecipeConfig(epochs=0)


PUBTATOR = """\
1|t|Breast cancer is common in women.
1|a|Patients with diabetes were enrolled.
1\t0\t13\tBreast cancer\tDisease\tD001943
1\t48\t56\tdiabetes\tDisease\tD003920

"""


def test_the_cli_trains_a_tagger_and_detects_with_it_and_a_dictionary(
    trained: tuple[Path, dict], tiny_dictionary_file: Path, tmp_path: Path,  # type: ignore[type-arg]
    capsys: pytest.CaptureFixture[str],
) -> None:
    from linker.cli import main

    corpus = tmp_path / "train.PubTator"
    corpus.write_text(PUBTATOR, encoding="utf-8")
    out = tmp_path / "cli-tagger"
    assert main(["train-tagger", "--train", str(corpus), "--dev", str(corpus), "--mention-type", "Disease",
                 "--out", str(out), "--epochs", "1", "--max-length", "32", "--stride", "8", "--device", "cpu"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["method"], report["documents"], report["spans"], report["epochs"]) == ("tagger", 1, 2, 1)
    assert (out / "tagger.json").exists()

    texts = tmp_path / "texts.txt"
    texts.write_text("Breast cancer and diabetes were studied.\n\nHuntington chorea in a family.\n", encoding="utf-8")
    lines_out = tmp_path / "spans.jsonl"
    folder, _ = trained
    assert main(["detect", "--in", str(texts), "--tagger", str(folder), "--dictionary", str(tiny_dictionary_file),
                 "--out", str(lines_out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["documents"] == 2 and summary["rule"] == "tagger-first"
    rows = [json.loads(line) for line in lines_out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["1", "3"]
    first = {(s["text"], s["source"]) for s in rows[0]["spans"]}
    assert ("Breast cancer", "both") in first and ("diabetes", "both") in first
    # The name is found whichever detector's reading wins (the tiny tagger may cut it in two): its characters
    # are covered, by non-overlapping spans.
    second = sorted((s["start"], s["end"]) for s in rows[1]["spans"])
    covered = {i for start, end in second for i in range(start, end)}
    assert set(range(0, 10)) | set(range(11, 17)) <= covered  # "Huntington" and "chorea"
    assert all(a[1] <= b[0] for a, b in zip(second, second[1:], strict=False))

