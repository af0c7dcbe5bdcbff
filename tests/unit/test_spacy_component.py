"""The spaCy components (linker/spacy_component.py) in real spaCy pipelines (spacy.blank("en"), no model
downloaded) over a real sparse-only linker artifact built here from the tiny dictionary: scispaCy-style kb_ents,
the threshold, batching over nlp.pipe, a saved pipeline loaded back, clear errors, and detection + linking."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

spacy = pytest.importorskip("spacy", reason="spaCy is a dev extra (pip install 'spacy>=3.7')")

import linker.spacy_component  # noqa: E402,F401  (registers the factories)
from linker.linker import Linker  # noqa: E402

TEXT = ("Breast and ovarian cancer were seen with NIDDM. Patients with ataxia telangiectasia (A-T) and "
        "Huntington chorea were also seen, and a breast carcinoma.")
PATTERNS = [{"label": "DISEASE", "pattern": p} for p in
            ("breast and ovarian cancer", "NIDDM", "A-T", "Huntington chorea", "breast carcinoma")]
TEXTS = [TEXT, "Type 2 diabetes and colorectal cancer.", "No disease here.", "A plasma cell myeloma, and NIDDM."]
MORE_PATTERNS = [{"label": "DISEASE", "pattern": p} for p in ("Type 2 diabetes", "colorectal cancer", "plasma cell myeloma")]


@pytest.fixture(scope="module")
def artifact(tiny_dictionary_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sparse-only linker (tf-idf over the tiny dictionary's names): built and saved in well under a second."""
    from linker.dictionary_formats import iter_dnorm_dictionary

    folder = tmp_path_factory.mktemp("spacy") / "tiny-linker"
    Linker.build(list(iter_dnorm_dictionary(tiny_dictionary_file)), None).save(folder)
    return folder


def _nlp(artifact: Path, **config: object):  # type: ignore[no-untyped-def]
    nlp = spacy.blank("en")
    nlp.add_pipe("entity_ruler", config={"phrase_matcher_attr": "LOWER"}).add_patterns(PATTERNS + MORE_PATTERNS)
    nlp.add_pipe("elwb_linker", config={"artifact": str(artifact), **config})
    return nlp


def _links(doc) -> list[tuple[str, list[tuple[str, float]], str | None]]:  # type: ignore[no-untyped-def]
    return [(ent.text, ent._.kb_ents, ent._.concept) for ent in doc.ents]


def test_entities_get_kb_ents_best_first_as_the_linker_ranks_them(artifact: Path) -> None:
    doc = _nlp(artifact, k=3)(TEXT)
    by_text = {ent.text: ent for ent in doc.ents}
    assert set(by_text) == {"Breast and ovarian cancer", "NIDDM", "A-T", "Huntington chorea", "breast carcinoma"}
    for ent in doc.ents:
        scores = [score for _, score in ent._.kb_ents]
        assert 0 < len(scores) <= 3 and scores == sorted(scores, reverse=True)
        assert ent._.concept == ent._.kb_ents[0][0] and ent._.confidence is None  # no calibration in this artifact
    assert by_text["NIDDM"]._.concept == "D003924"
    assert by_text["Huntington chorea"]._.concept == "D006816"
    assert by_text["A-T"]._.concept == "D001260"  # "A-T" is defined in the text: ataxia telangiectasia
    # The same candidates the linker gives the mention in its document.
    linker = Linker.load(artifact)
    (cands,) = linker.link_mentions(["NIDDM"], TEXT, k=3)
    assert by_text["NIDDM"]._.kb_ents == [(c.concept_id, pytest.approx(c.score)) for c in cands]


def test_a_composite_mention_has_a_concept_per_part(artifact: Path) -> None:
    doc = _nlp(artifact, k=2)(TEXT)
    (ent,) = [e for e in doc.ents if e.text == "Breast and ovarian cancer"]
    assert ent._.concepts == ["D001943", "D010051"]
    assert [len(part) for part in ent._.kb_parts] == [2, 2]
    assert len(ent._.kb_ents) == 2 and ent._.concept in {"D001943", "D010051"}
    assert len({cid for cid, _ in ent._.kb_ents}) == len(ent._.kb_ents)  # each concept once


def test_the_threshold_drops_candidates_under_it_and_the_concept_of_a_weak_match(artifact: Path) -> None:
    plain = {text: (kb, concept) for text, kb, concept in _links(_nlp(artifact, k=5)(TEXT))}
    exact_score = plain["NIDDM"][0][0][1]
    weak_best = plain["breast carcinoma"][0][0][1]  # not a name of the dictionary as written
    assert weak_best < exact_score
    threshold = (weak_best + exact_score) / 2
    held = {text: (kb, concept) for text, kb, concept in _links(_nlp(artifact, k=5, threshold=threshold)(TEXT))}
    assert held["breast carcinoma"] == ([], None)
    assert held["NIDDM"][1] == "D003924"
    assert held["NIDDM"][0] == [(cid, s) for cid, s in plain["NIDDM"][0] if s >= threshold]


def test_pipe_links_a_batch_in_one_search_as_one_at_a_time_does(artifact: Path) -> None:
    nlp = _nlp(artifact, k=4)
    one_by_one = [_links(nlp(text)) for text in TEXTS]
    component = nlp.get_pipe("elwb_linker")
    retriever = component.linker.retriever
    searches: list[int] = []
    retrieve = retriever.retrieve

    def counted(queries, *args, **kwargs):  # type: ignore[no-untyped-def]
        searches.append(len(queries))
        return retrieve(queries, *args, **kwargs)

    retriever.retrieve = counted
    batched = [_links(doc) for doc in nlp.pipe(TEXTS, batch_size=8)]
    assert len(searches) == 1 and searches[0] == sum(len(links) for links in one_by_one) + 1  # the composite's part
    assert [[(t, [c for c, _ in kb], concept) for t, kb, concept in doc] for doc in batched] == \
        [[(t, [c for c, _ in kb], concept) for t, kb, concept in doc] for doc in one_by_one]
    for doc_a, doc_b in zip(batched, one_by_one, strict=True):
        for (_, kb_a, _), (_, kb_b, _) in zip(doc_a, doc_b, strict=True):
            assert [s for _, s in kb_a] == pytest.approx([s for _, s in kb_b])


def test_sentence_context_needs_sentence_boundaries(artifact: Path) -> None:
    nlp = _nlp(artifact, context="sentence")
    with pytest.raises(ValueError, match="needs sentence boundaries"):
        nlp(TEXT)
    nlp.add_pipe("sentencizer", first=True)
    by_text = {text: concept for text, _, concept in _links(nlp(TEXT))}
    assert by_text["A-T"] == "D001260" and by_text["NIDDM"] == "D003924"


def test_a_saved_pipeline_loads_back_by_its_entry_points_and_links_the_same(artifact: Path, tmp_path: Path) -> None:
    nlp = _nlp(artifact, k=3, threshold=0.2)
    expected = _links(nlp(TEXT))
    nlp.to_disk(tmp_path / "pipeline")
    assert f"artifact = \"{artifact}\"" in (tmp_path / "pipeline" / "config.cfg").read_text()
    assert _links(spacy.load(tmp_path / "pipeline")(TEXT)) == expected
    # A fresh interpreter that never imports linker.spacy_component: spaCy finds the factory by its entry point
    # (run outside the repository, whose own el_workbench.egg-info, when a build left one, would stand first).
    script = ("import json, sys, spacy; doc = spacy.load(sys.argv[1])(sys.argv[2]); "
              "print(json.dumps([[e.text, e._.concept] for e in doc.ents]))")
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "pipeline"), TEXT], capture_output=True,
                         text=True, check=True, timeout=300, cwd=tmp_path)
    assert json.loads(out.stdout) == [[text, concept] for text, _, concept in expected]


def test_a_missing_or_wrong_artifact_is_a_clear_error(artifact: Path, tmp_path: Path) -> None:
    nlp = spacy.blank("en")
    with pytest.raises(FileNotFoundError, match=r"'elwb_linker'.*no such artifact folder"):
        nlp.add_pipe("elwb_linker", config={"artifact": str(tmp_path / "nowhere")})
    with pytest.raises(FileNotFoundError, match="not a linker artifact"):
        nlp.add_pipe("elwb_linker", config={"artifact": str(tmp_path)})
    with pytest.raises(ValueError, match="give the linker artifact folder"):
        nlp.add_pipe("elwb_linker")
    with pytest.raises(ValueError, match="context 'paragraph'"):
        nlp.add_pipe("elwb_linker", config={"artifact": str(artifact), "context": "paragraph"})
    with pytest.raises(ValueError, match="nothing to detect with"):
        nlp.add_pipe("elwb_detector")
    with pytest.raises(FileNotFoundError, match="no such dictionary file"):
        nlp.add_pipe("elwb_detector", config={"dictionary": str(tmp_path / "none.txt")})


def test_the_detector_sets_entities_a_blank_pipeline_then_links(
    artifact: Path, tiny_dictionary_file: Path
) -> None:
    from linker.detect.detector import Detector

    text = "Breast cancer and type 2 diabetes were studied; all had NIDDM, none had multiple myeloma."
    for dictionary in (str(tiny_dictionary_file), str(artifact)):  # a dictionary file, or an artifact's names
        nlp = spacy.blank("en")
        nlp.add_pipe("elwb_detector", config={"dictionary": dictionary, "label": "DISEASE"})
        nlp.add_pipe("elwb_linker", config={"artifact": str(artifact), "k": 2})
        doc = nlp(text)
        spans = Detector.load(dictionaries=[dictionary]).detect([text])[0]
        assert [(e.start_char, e.end_char) for e in doc.ents] == [(s.start, s.end) for s in spans]
        assert [(e.text, e.label_, e._.detector, e._.concept) for e in doc.ents] == [
            ("Breast cancer", "DISEASE", "matcher", "D001943"), ("type 2 diabetes", "DISEASE", "matcher", "D003924"),
            ("NIDDM", "DISEASE", "matcher", "D003924"), ("multiple myeloma", "DISEASE", "matcher", "D009101")]
        assert [[e.text for e in d.ents] for d in nlp.pipe([text, "Nothing.", text])] == \
            [[e.text for e in doc.ents], [], [e.text for e in doc.ents]]


def test_the_detector_keeps_entities_set_before_it_unless_told_to_overwrite(tiny_dictionary_file: Path) -> None:
    text = "Patients with breast cancer and diabetes."
    for overwrite, expected in ((False, [("patients with breast", "RULE"), ("diabetes", "ENTITY")]),
                                (True, [("breast cancer", "ENTITY"), ("diabetes", "ENTITY")])):
        nlp = spacy.blank("en")
        nlp.add_pipe("entity_ruler").add_patterns([{"label": "RULE", "pattern": "Patients with breast"}])
        nlp.add_pipe("elwb_detector", config={"dictionary": str(tiny_dictionary_file), "overwrite": overwrite})
        assert [(e.text.lower(), e.label_) for e in nlp(text).ents] == expected


def test_the_detector_runs_a_tagger_folder_merged_with_the_dictionary(tiny_dictionary_file: Path, tmp_path: Path) -> None:
    """An untrained tagger (the base MiniLM with a new token classifier, saved as a tagger folder) merged with the
    dictionary matcher: the entities are the merged spans, widened to whole tokens, batched as one at a time."""
    import torch

    from linker.detect.detector import Detector
    from linker.detect.tagger import Tagger

    torch.manual_seed(0)
    Tagger.from_base(max_length=32, stride=8, mention_types=("Disease",), device="cpu").save(tmp_path / "tagger")
    config = {"tagger": str(tmp_path / "tagger"), "dictionary": str(tiny_dictionary_file), "device": "cpu"}
    nlp = spacy.blank("en")
    nlp.add_pipe("elwb_detector", config=config)
    detector = nlp.get_pipe("elwb_detector").detector
    assert detector.detectors == ["tagger", "matcher"] and detector.merged
    texts = ["Breast cancer and diabetes were studied.", "Huntington chorea in a family with colorectal cancer."]
    docs = list(nlp.pipe(texts, batch_size=2))
    assert [[(e.text, e._.detector) for e in d.ents] for d in docs] == \
        [[(e.text, e._.detector) for e in nlp(t).ents] for t in texts]
    for doc, spans in zip(docs, Detector.load(config["tagger"], [config["dictionary"]], device="cpu").detect(texts),
                          strict=True):
        for ent in doc.ents:  # each entity covers a detected span and says which detector found it
            assert any(ent.start_char <= s.start and s.end <= ent.end_char and ent._.detector == s.source
                       for s in spans)
        # Dictionary matches fall on token boundaries: the merge kept them, they are entities as they are.
        assert [(e.start_char, e.end_char) for e in doc.ents if e._.detector != "tagger"] == \
            [(s.start, s.end) for s in spans if s.source != "tagger"]


def test_linker_imports_without_spacy() -> None:
    script = """
import sys
sys.modules["spacy"] = None  # as if spaCy were not installed
import linker, linker.linker, linker.cli, linker.detect.detector
try:
    import linker.spacy_component
except ImportError as exc:
    print(exc)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=300)
    assert "linker.spacy_component needs spaCy: pip install" in out.stdout
