"""HiPrBERT: distance labels on a toy hierarchy, batches, the loss at every threshold, mining, the method's
artifact and its refusals."""

from __future__ import annotations

import copy
import json
import random
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

from linker.data import ConceptRecord, Synonym, iter_concept_mentions
from linker.encoders import TransformerEncoder
from linker.hierarchy.evaluation import held_out_pairs, hierarchy_scores
from linker.hierarchy.graph import (
    OTHER,
    PARENT_CHILD,
    SIBLING,
    SYNONYM,
    HierarchySource,
    NoHierarchyError,
    held_out,
)
from linker.hierarchy.sampling import anchor_group, epoch_batches
from linker.losses import HierarchicalMultiSimilarityLoss, InBatchSynonymContrastiveLoss

#        neoplasms
#        /       \
#   breast     ovarian          diabetes (root, no relation to the tumours)
#   /    \                           |
# ductal lobular                   type 2
TOY = {
    "neo": ("Neoplasms", ("tumors", "cancer"), ()),
    "breast": ("Breast Neoplasms", ("breast cancer", "mammary tumor"), ("neo",)),
    "ovary": ("Ovarian Neoplasms", ("ovarian cancer",), ("neo",)),
    "ductal": ("Ductal Carcinoma", ("ductal breast cancer",), ("breast",)),
    "lobular": ("Lobular Carcinoma", ("lobular breast cancer",), ("breast",)),
    "dm": ("Diabetes Mellitus", ("diabetes",), ()),
    "t2dm": ("Type 2 Diabetes", ("NIDDM", "adult onset diabetes"), ("dm",)),
}


def _records(toy: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]]) -> list[ConceptRecord]:
    return [ConceptRecord(cid, pref, tuple(Synonym(s) for s in syns), parents=parents)
            for cid, (pref, syns, parents) in toy.items()]


@pytest.fixture()
def toy() -> HierarchySource:
    return HierarchySource.from_records("toy", _records(TOY))


def test_distances_follow_the_papers_definitions(toy: HierarchySource) -> None:
    assert toy.distance("breast", "breast") == SYNONYM
    assert toy.distance("breast", "ovary") == SIBLING
    assert toy.distance("ductal", "lobular") == SIBLING
    assert toy.distance("breast", "neo") == PARENT_CHILD
    assert toy.distance("neo", "breast") == PARENT_CHILD
    assert toy.distance("ductal", "neo") == OTHER  # grandparent: "otherwise"
    assert toy.distance("ductal", "ovary") == OTHER  # uncle
    assert toy.distance("t2dm", "breast") == OTHER
    matrix = toy.distance_matrix(["breast", "ovary", "neo", "dm", "breast"])
    assert matrix.tolist() == [
        [0, 1, 2, 3, 0],
        [1, 0, 2, 3, 1],
        [2, 2, 0, 3, 2],
        [3, 3, 3, 0, 3],
        [0, 1, 2, 3, 0],
    ]


def test_a_concept_that_is_both_sibling_and_child_takes_the_closer_relation() -> None:
    # In a DAG, "x" is a child of "a" and also shares the parent "root" with "a".
    source = HierarchySource("dag", {"root": ["r"], "a": ["a"], "x": ["x"]}, {"a": ("root",), "x": ("a", "root")})
    assert source.distance("a", "x") == SIBLING


def test_a_cycle_does_not_hang_the_distances_or_the_batches() -> None:
    source = HierarchySource("cyclic", {"a": ["alpha", "a1"], "b": ["beta"], "c": ["gamma"]},
                             {"a": ("b", "a"), "b": ("a",), "c": ("b",)})
    done: list[object] = []

    def work() -> None:
        done.append(source.distance_matrix(["a", "b", "c"]).tolist())
        done.append(epoch_batches([source], batch_size=4, seed=1))

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(timeout=10)
    assert len(done) == 2, "the distance computation hung on a cycle"
    assert done[0] == [[0, 2, 1], [2, 0, 2], [1, 2, 0]]  # a-b parent-child both ways; a and c share parent b
    assert "a" not in source.parents["a"]  # the self-loop is dropped


def test_a_dictionary_without_hierarchy_is_refused_by_name() -> None:
    flat = {k: (p, s, ()) for k, (p, s, _) in TOY.items()}
    with pytest.raises(NoHierarchyError, match="'flat_dictionary' has no hierarchy"):
        HierarchySource.from_records("flat_dictionary", _records(flat))


def test_held_out_concepts_are_a_stable_share_and_leave_their_edges(toy: HierarchySource) -> None:
    ids = [f"C{i:05d}" for i in range(5000)]
    share = sum(held_out(c, 0.1) for c in ids) / len(ids)
    assert 0.08 < share < 0.12
    assert [held_out(c, 0.1) for c in ids[:50]] == [held_out(c, 0.1) for c in ids[:50]]
    kept = toy.without(["breast"])
    assert "breast" not in kept.names and kept.distance("ductal", "lobular") == SIBLING


def test_an_anchor_group_holds_synonyms_two_siblings_a_parent_and_a_child(toy: HierarchySource) -> None:
    group = anchor_group(toy, "breast", random.Random(0))
    concepts = [t.concept for t in group]
    assert concepts[:2] == ["breast", "breast"] and group[0].text != group[1].text
    assert concepts[2:] == ["ovary", "neo", concepts[4]] and concepts[4] in {"ductal", "lobular"}  # one sibling only
    ductal = [t.concept for t in anchor_group(toy, "ductal", random.Random(0))]
    assert ductal[:2] == ["ductal", "ductal"] and ductal[2:] == ["lobular", "breast"]  # a leaf: no child
    many = HierarchySource.from_records("wide", _records(TOY | {f"s{i}": (f"Sibling {i}", (), ("neo",)) for i in range(5)}))
    siblings = [t.concept for t in anchor_group(many, "breast", random.Random(1)) if many.distance("breast", t.concept) == SIBLING]
    assert len(siblings) == len(set(siblings)) == 2


def test_batches_cover_every_distance_and_never_mix_sources(toy: HierarchySource) -> None:
    mentions = HierarchySource.synonyms_only("corpus", [("heart attack", "C1"), ("MI", "C1"), ("stroke", "C2"),
                                                        ("brain attack", "C2")])
    batches = epoch_batches([toy, mentions], batch_size=8, seed=3)
    assert {b.source for b in batches} == {0, 1}
    toy_batch = next(b for b in batches if b.source == 0)
    matrix = toy.distance_matrix([t.concept for t in toy_batch.terms])
    assert {SYNONYM, SIBLING, PARENT_CHILD, OTHER} <= set(np.unique(matrix).tolist())
    assert len(set(toy_batch.terms)) == len(toy_batch.terms)
    assert mentions.distance("C1", "C2") == OTHER  # no hierarchy: synonyms or other


def test_the_loss_at_every_threshold_matches_the_formula() -> None:
    emb = torch.nn.functional.normalize(torch.tensor([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0]]), dim=-1)
    dist = torch.tensor([[0, 1, 3], [1, 0, 3], [3, 3, 0]])
    loss = HierarchicalMultiSimilarityLoss(margin=10.0)  # a wide margin mines every pair: the plain formula
    sim = emb @ emb.T
    a, b, lam = 2.0, 2.0, 0.5

    def anchor(pos: list[float], neg: list[float]) -> float:
        return (math_log1p(sum(np.exp(-a * (s - lam)) for s in pos)) / a
                + math_log1p(sum(np.exp(b * (s - lam)) for s in neg)) / b)

    s = sim.numpy()
    # Mining needs a positive to compare with, so an anchor without one gives nothing at that threshold.
    # d0 = 0: no synonyms in the batch: nothing. d0 = 1: 0-1 positive, 2 negative; anchor 2 has no positive.
    # d0 = 2: no distance-2 pair, the same sets as d0 = 1.
    d0_1 = np.mean([anchor([s[0, 1]], [s[0, 2]]), anchor([s[1, 0]], [s[1, 2]])])
    expected = 2 * d0_1
    assert loss(emb, dist).item() == pytest.approx(expected, rel=1e-5)
    assert loss.thresholds is None  # every threshold below the largest distance (0, 1, 2)


def math_log1p(x: float) -> float:
    return float(np.log1p(x))


def test_mining_keeps_only_hard_pairs() -> None:
    # Anchor 0: positive 1 is far more similar than negative 2: nothing is hard at margin 0.25.
    emb = torch.nn.functional.normalize(torch.tensor([[1.0, 0.0], [0.99, 0.1], [0.0, 1.0]]), dim=-1)
    dist = torch.tensor([[0, 0, 3], [0, 0, 3], [3, 3, 0]])
    easy = HierarchicalMultiSimilarityLoss(thresholds=(0,))(emb, dist)
    assert easy.item() == pytest.approx(0.0)
    # Move the negative close: now it is mined (and the positive too).
    emb2 = torch.nn.functional.normalize(torch.tensor([[1.0, 0.0], [0.99, 0.1], [0.95, 0.3]]), dim=-1)
    assert HierarchicalMultiSimilarityLoss(thresholds=(0,))(emb2, dist).item() > 0.1


def test_sapberts_loss_is_the_synonym_threshold_of_the_hierarchical_one() -> None:
    torch.manual_seed(0)
    emb = torch.nn.functional.normalize(torch.randn(12, 8), dim=-1)
    labels = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5])
    distances = (labels[:, None] != labels[None, :]).long() * OTHER
    sapbert = InBatchSynonymContrastiveLoss()(emb, labels)
    general = HierarchicalMultiSimilarityLoss(1.0, 60.0, 0.5, 0.2, thresholds=(0,))(emb, distances)
    assert sapbert.item() == pytest.approx(general.item(), rel=1e-6)


def test_a_few_steps_order_a_toy_hierarchy(minilm: TransformerEncoder, toy: HierarchySource) -> None:
    torch.manual_seed(0)
    encoder = copy.deepcopy(minilm)
    loss_fn = HierarchicalMultiSimilarityLoss()
    terms = [(n, c) for c, names in toy.names.items() for n in names]
    texts, concepts = [t for t, _ in terms], [c for _, c in terms]
    distances = torch.as_tensor(toy.distance_matrix(concepts))
    optimizer = torch.optim.AdamW(encoder.parameters(), lr=5e-5)
    encoder.train()
    losses = []
    for _ in range(6):
        loss = loss_fn(encoder(encoder.tokenize(texts)), distances)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


def test_held_out_scores_rank_by_distance() -> None:
    source = HierarchySource.from_records("toy", _records(TOY))
    pairs = held_out_pairs(source, list(source.names), per_distance=10, seed=0)
    assert {d for _, _, d in pairs} == {SYNONYM, SIBLING, PARENT_CHILD, OTHER}
    # An encoder that knows the answer: identical vectors for synonyms, orthogonal otherwise.
    concept_of = {n: c for c, names in source.names.items() for n in names}
    order = sorted(source.names)

    def encode(texts: list[str]) -> np.ndarray:
        return np.eye(len(order), dtype=np.float32)[[order.index(concept_of[t]) for t in texts]]

    scores = hierarchy_scores(encode, pairs)
    assert scores["auc_0_1"] == 1.0 and scores["auc_0_3"] == 1.0
    assert scores["auc_1_2"] == 0.5  # this encoder cannot tell siblings from parents


def test_concept_mention_files_skip_the_test_split(tmp_path: Path) -> None:
    import io
    import tarfile

    archive = tmp_path / "mentions.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for member, text in (("set/train/1.txt", "C01||heart attack\nC01||MI\n"), ("set/test/2.txt", "C02||stroke\n")):
            data = text.encode()
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    assert list(iter_concept_mentions(archive)) == [("heart attack", "C01"), ("MI", "C01")]
    bad = tmp_path / "bad.txt"
    bad.write_text("C01 heart attack\n")
    with pytest.raises(ValueError, match="bad.txt:1: expected 'ID\\|\\|mention text'"):
        list(iter_concept_mentions(bad))


def test_the_method_writes_a_base_encoder_that_biosyn_and_index_builds_load(tmp_path: Path) -> None:
    from linker.methods.hiprbert import MANIFEST
    from linker.methods.hiprbert_params import HiPrBERTRecipeConfig
    from linker.recipe import TrainingInputs, train

    source = HierarchySource.from_records("toy", _records(TOY))
    from linker.dictionary import NameTable

    inputs = TrainingInputs(table=NameTable(), pairs=(), concept_counts={}, out=tmp_path / "base", hierarchies=[source])
    config = HiPrBERTRecipeConfig(scope="student", max_batches=2, batch_size=8, device="cpu")
    out, report = train("hiprbert", inputs, config)
    assert report["encoder_layers"] == 3 and report["sources"][0]["edges"] == 5
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["method"] == "hiprbert" and manifest["distances"] == "hierarchy"
    loaded = TransformerEncoder.load(out)
    assert loaded.num_layers == 3
    vectors = loaded.encode(["breast cancer", "ovarian cancer"])
    assert vectors.shape == (2, loaded.dim) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert not (out.parent / "base.partial").exists() and not (out / "checkpoints").exists()

    # BioSyn's CPU default keeps layers (0, 2, 5) of its base; a student base keeps all three.
    from linker.methods.biosyn import BioSynRecipeConfig

    table = NameTable.from_records(_records(TOY))
    logs: list[str] = []
    biosyn_inputs = TrainingInputs(table=table, pairs=[("ductal cancer", "ductal"), ("sugar disease", "dm")],
                                   concept_counts={}, out=tmp_path / "linker", base_model=out)
    from linker.recipe import TrainingCallbacks

    _, biosyn_report = train("biosyn", biosyn_inputs, BioSynRecipeConfig(
        scope="student", device="cpu", epochs=1), TrainingCallbacks(on_log=logs.append))
    assert biosyn_report["encoder_layers"] == 3
    assert any("all kept" in line for line in logs)
    # The hierarchy base already learnt the synonyms: BioSyn's own synonym pre-training is skipped.
    assert biosyn_report["skip_pretrain"] is True and "pretrain" not in biosyn_report
    assert any("synonym pre-training skipped" in line for line in logs)


def test_the_method_refuses_sources_without_any_hierarchy(tmp_path: Path) -> None:
    from linker.dictionary import NameTable
    from linker.recipe import TrainingInputs, train

    corpus = HierarchySource.synonyms_only("corpus", [("heart attack", "C1"), ("MI", "C1")])
    inputs = TrainingInputs(table=NameTable(), pairs=(), concept_counts={}, out=tmp_path / "x", hierarchies=[corpus])
    with pytest.raises(NoHierarchyError, match="at least one dictionary with a hierarchy"):
        train("hiprbert", inputs)
    assert not (tmp_path / "x").exists() and not (tmp_path / "x.partial").exists()
