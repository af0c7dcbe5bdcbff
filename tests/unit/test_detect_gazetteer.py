"""Dictionary features for the tagger: token features from matches, cross-fitted matchers for training documents,
constrained (Viterbi) decoding, and a real MiniLM tagger trained with the features, saved and loaded back."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from linker.detect.bio import viterbi_bio
from linker.detect.gazetteer import (
    FEATURE_B,
    FEATURE_I,
    FEATURE_O,
    Gazetteer,
    cross_fitted_matchers,
    token_features,
)
from linker.detect.spans import Span
from linker.detect.tagger import Tagger
from tests.unit.test_detect_tagger import DOCS, SENTENCES


def test_token_features_mark_the_first_and_later_tokens_of_each_match() -> None:
    # "Breast cancer risk in type 2 diabetes": tokens start at these characters.
    spans = [Span(0, 13, "Breast cancer"), Span(22, 37, "type 2 diabetes")]
    starts = [0, 7, 10, 14, 19, 22, 27, 29, 34]  # "breast", "can", "##cer", "risk", "in", "type", "2", "dia", "##betes"
    assert list(token_features(starts, spans)) == [
        FEATURE_B, FEATURE_I, FEATURE_I, FEATURE_O, FEATURE_O, FEATURE_B, FEATURE_I, FEATURE_I, FEATURE_I]
    # Two matches back to back: the second begins again.
    assert list(token_features([0, 5], [Span(0, 4, "ALS1"), Span(5, 9, "ALS2")])) == [FEATURE_B, FEATURE_B]
    assert list(token_features([0, 5], [])) == [FEATURE_O, FEATURE_O]


def test_a_training_document_is_matched_without_its_own_folds_mentions() -> None:
    texts = [["Wolfram syndrome"], ["Bardet Biedl syndrome"], ["Alstrom syndrome"], []]
    matchers = cross_fitted_matchers(["diabetes"], texts, folds=2)
    # Documents 0 and 2 are fold 0, documents 1 and 3 fold 1.
    assert "Wolfram syndrome" not in matchers[0] and "Alstrom syndrome" not in matchers[0]
    assert "Bardet Biedl syndrome" in matchers[0] and "diabetes" in matchers[0]
    assert "Wolfram syndrome" in matchers[1] and "Bardet Biedl syndrome" not in matchers[3]
    with pytest.raises(ValueError, match="2 folds"):
        cross_fitted_matchers([], texts, folds=1)


def test_the_gazetteer_round_trips_through_its_file(tmp_path: Path) -> None:
    gazetteer = Gazetteer(["Breast Cancer", "HNPCC", "breast cancer", " ", "Naïve lymphoma"])
    gazetteer.save(tmp_path)
    again = Gazetteer.load(tmp_path)
    assert again.names == ["Breast Cancer", "HNPCC", "breast cancer", "Naïve lymphoma"]
    assert [s.text for s in again.find("HNPCC and hnpcc and breast cancer")] == ["HNPCC", "breast cancer"]
    (tmp_path / "gazetteer.txt.gz").write_bytes(b"not gzip")
    with pytest.raises(ValueError, match="cannot be read"):
        Gazetteer.load(tmp_path)


def test_viterbi_never_opens_a_mention_with_inside() -> None:
    o, b, i = 0, 1, 2
    # Word by word the argmax is O, I, I: read leniently that is one mention of two words. The constraint
    # makes it B I (the I of the second word is a mention that needs a B).
    probs = np.array([[0.9, 0.05, 0.05], [0.1, 0.4, 0.5], [0.2, 0.1, 0.7]])
    assert list(viterbi_bio(probs)) == [o, b, i]
    # A confident O between two I's splits them into two mentions, each opened by B.
    probs = np.array([[0.1, 0.8, 0.1], [0.95, 0.0, 0.05], [0.1, 0.3, 0.6]])
    assert list(viterbi_bio(probs)) == [b, o, b]
    assert list(viterbi_bio(np.array([[0.2, 0.3, 0.5]]))) == [b]
    assert viterbi_bio(np.zeros((0, 3))).shape == (0,)
    # Without conflicts it is the argmax.
    probs = np.array([[0.1, 0.8, 0.1], [0.1, 0.1, 0.8], [0.9, 0.05, 0.05]])
    assert list(viterbi_bio(probs)) == [b, i, o]


NAMES = ["breast cancer", "diabetes", "colorectal cancer", "Multiple Myeloma", "gastric lymphoma"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:  # type: ignore[type-arg]
    import torch

    from linker.dictionary import NameTable
    from linker.recipe import TaggerRecipeConfig, TrainingInputs, train

    torch.set_num_threads(2)
    out = tmp_path_factory.mktemp("gazetteer-tagger") / "tagger"
    inputs = TrainingInputs(table=NameTable(), pairs=(), concept_counts={}, out=out, documents=DOCS,
                            dev_documents=DOCS[:4], mention_types=frozenset({"Disease"}), names=NAMES)
    config = TaggerRecipeConfig(epochs=12, lr=3e-4, batch_size=4, max_length=32, stride=8, warmup=0.0, device="cpu",
                                gazetteer_folds=2)
    return train("tagger", inputs, config)


def test_a_tagger_with_dictionary_features_keeps_its_names_and_vectors(trained: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    folder, report = trained
    assert {"gazetteer.txt.gz", "gazetteer.safetensors"} <= {p.name for p in folder.iterdir()}
    settings = json.loads((folder / "tagger.json").read_text())
    # The dictionary's names and the training mentions' texts, each spelling once ("diabetes" is in both).
    assert settings["gazetteer"]["names"] == len(NAMES) + 5
    assert report["dictionary_features"] == {"names": 10, "folds": 2}
    tagger = Tagger.load(folder, "cpu")
    assert tagger.gazetteer is not None and tagger.feature_embedding is not None
    # The vectors were trained away from their zero start.
    assert float(tagger.feature_embedding.weight.detach().abs().sum()) > 0


def test_it_reads_the_features_of_its_own_gazetteer(trained: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    folder, _ = trained
    tagger = Tagger.load(folder, "cpu")
    enc = tagger.encode("Gastric lymphoma was seen.")
    # "gastric" begins the match, the subtokens of "lymphoma" continue it, "was seen ." are outside.
    assert enc.feats[0] == FEATURE_B and FEATURE_I in enc.feats[1:-3] and set(enc.feats[-3:]) == {FEATURE_O}
    assert tagger.knows("Gastric Lymphoma") and tagger.knows("Huntington disease") and not tagger.knows("asthma")
    # Matches given by the caller (training's cross-fitted ones) replace the gazetteer's.
    assert set(tagger.encode("Gastric lymphoma was seen.", matches=[]).feats) == {FEATURE_O}
    found = tagger.predict([text for text, _ in SENTENCES])
    assert [[s.text for s in spans] for spans in found] == [m for _, m in SENTENCES]


def test_save_and_load_keep_the_features(trained: tuple[Path, dict], tmp_path: Path) -> None:  # type: ignore[type-arg]
    folder, _ = trained
    tagger = Tagger.load(folder, "cpu")
    tagger.save(tmp_path / "copy")
    again = Tagger.load(tmp_path / "copy", "cpu")
    texts = ["Gastric lymphoma and diabetes were studied.", "Nothing here.", ""]
    first, second = tagger.predict(texts), again.predict(texts, batch_size=1)
    assert [[(s.start, s.end) for s in spans] for spans in first] == [[(s.start, s.end) for s in spans] for spans in second]
    assert [s.score for spans in first for s in spans] == pytest.approx([s.score for spans in second for s in spans])


def test_a_folder_missing_its_features_is_refused_with_their_names(trained: tuple[Path, dict], tmp_path: Path) -> None:  # type: ignore[type-arg]
    folder, _ = trained
    broken = tmp_path / "broken"
    shutil.copytree(folder, broken)
    (broken / "gazetteer.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="gazetteer.safetensors"):
        Tagger.load(broken, "cpu")
    (broken / "gazetteer.safetensors").write_bytes(b"\x00" * 16)
    with pytest.raises(ValueError, match="cannot be read"):
        Tagger.load(broken, "cpu")


def test_without_names_the_tagger_reads_the_text_alone(tmp_path: Path) -> None:
    from linker.dictionary import NameTable
    from linker.recipe import TaggerRecipeConfig, TrainingInputs, train

    inputs = TrainingInputs(table=NameTable(), pairs=(), concept_counts={}, out=tmp_path / "plain", documents=DOCS[:2],
                            names=NAMES)
    config = TaggerRecipeConfig(epochs=1, batch_size=2, max_length=32, stride=8, device="cpu",
                                dictionary_features=False)
    folder, report = train("tagger", inputs, config)
    assert report["dictionary_features"] is None and not (folder / "gazetteer.txt.gz").exists()
    plain = Tagger.load(folder, "cpu")
    assert plain.feature_embedding is None and not plain.knows("diabetes")


def test_a_defined_short_form_is_tagged_wherever_it_recurs() -> None:
    from linker.detect.short_forms import propagate_short_forms

    def span(text: str, part: str, source: str = "tagger", score: float = 1.0) -> Span:
        at = text.index(part)
        return Span(at, at + len(part), part, source, score)

    text = ("Families with hereditary nonpolyposis colorectal cancer (HNPCC) were studied. HNPCC was seen twice; "
            "HNPCCs were not. Mass spectrometry (MS) was used.")
    # The span holds the long form whole ("nonpolyposis colorectal cancer"), with a word before it.
    out = propagate_short_forms(text, [span(text, "hereditary nonpolyposis colorectal cancer", score=0.9)], "tagger")
    assert [(s.text, s.start) for s in out] == [
        ("hereditary nonpolyposis colorectal cancer", text.index("hereditary")), ("HNPCC", text.index("HNPCC")),
        ("HNPCC", text.index("HNPCC was"))]
    assert {s.score for s in out} == {0.9} and {s.source for s in out} == {"tagger"}
    # Only the tail of the long form: the short form names something larger than the mention ("deleted in
    # colorectal cancer (DCC)" is a gene).
    dcc = "The deleted in colorectal cancer (DCC) gene. DCC is lost."
    assert [s.text for s in propagate_short_forms(dcc, [span(dcc, "colorectal cancer")], "tagger")] == [
        "colorectal cancer"]
    # A span running on past the long form: for the tagger the short form is a part of the mention; the
    # dictionary matcher's rule ("covers") takes it.
    g6pd = "Glucose-6-phosphate dehydrogenase (G6PD) deficiency. G6PD variants."
    whole = [span(g6pd, "Glucose-6-phosphate dehydrogenase (G6PD) deficiency")]
    assert propagate_short_forms(g6pd, whole, "tagger") == whole
    assert "G6PD" in [s.text for s in propagate_short_forms(g6pd, whole, "matcher", marks="covers")]
    # The matcher's variant drops a span that is a short form defined as something no span marks.
    ms = span(text, "MS", "matcher")
    assert propagate_short_forms(text, [ms], "matcher", drop_undefined=True, marks="covers") == []
    assert propagate_short_forms(text, [ms], "tagger") == [ms]
    with pytest.raises(ValueError, match="marks"):
        propagate_short_forms(text, [], "tagger", marks="ends")



def test_a_fold_matcher_reads_both_name_lists_longest_leftmost() -> None:
    [matcher] = cross_fitted_matchers(["breast cancer", "cancer risk"], [[], ["breast cancer risk"]], folds=2)[:1]
    # Document 0's fold matcher holds the dictionary and document 1's mention.
    text = "High breast cancer risk and cancer risk in breast cancer."
    assert [s.text for s in matcher.find(text)] == ["breast cancer risk", "cancer risk", "breast cancer"]
