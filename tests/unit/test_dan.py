"""The DAN name encoder (Fivez et al. 2021): its losses on a toy set, distance-weighted negatives, the
encoder's shapes and saved folder, hierarchy-level classes on a toy DAG with a cycle, the two evaluations
on hand-computed rankings, and a two-epoch run through the recipe that a linker loads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from linker.dictionary import NameTable
from linker.encoders.dan import DANConfig, DANEncoder
from linker.encoders.registry import load_encoder
from linker.encoders.wordvec import FastTextConfig, WordVectors
from linker.hierarchy.graph import HierarchySource
from linker.hierarchy.levels import (
    LevelClasses,
    concept_classes,
    concept_depths,
    hold_out_per_class,
    hypernym_mrr,
    hypernyms,
    level_classes,
    semantic_similarity_map,
)
from linker.losses import CosineDistanceLoss, CosineTripletLoss, distance_weighted_negatives
from linker.methods.dan import DANRecipeConfig, sample_negatives

CORPUS = [
    "breast cancer and ovarian cancer are frequent tumours in women",
    "type 2 diabetes mellitus also called adult onset diabetes or niddm",
    "huntington disease is a chorea inherited as a dominant trait",
    "multiple myeloma is a plasma cell cancer of the bone marrow",
    "colorectal cancer colorectal carcinoma and colon tumours",
    "ataxia telangiectasia also louis bar syndrome",
] * 3


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> None:
    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def vectors() -> WordVectors:
    return WordVectors.train(CORPUS, FastTextConfig(dim=16, epochs=2, workers=1))


@pytest.fixture(scope="module")
def vectors_folder(vectors: WordVectors, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("wordvectors")
    vectors.save(folder)
    return folder


# --- losses and negatives --------------------------------------------------------------------------------


def test_the_triplet_context_and_grounding_losses_fall_on_a_toy_set(vectors: WordVectors) -> None:
    torch.manual_seed(0)
    encoder = DANEncoder(vectors, DANConfig(hidden=64, dropout=0.0))
    anchors = ["breast cancer", "type 2 diabetes", "multiple myeloma"]
    positives = ["ovarian cancer", "adult onset diabetes", "plasma cell cancer"]
    negatives = ["huntington disease", "colorectal cancer", "ataxia telangiectasia"]
    u = {k: encoder.mean_vectors(v) for k, v in (("a", anchors), ("p", positives), ("n", negatives))}
    ground = (torch.nn.functional.normalize(u["a"], dim=-1) + torch.nn.functional.normalize(u["p"], dim=-1)) / 2
    triplet, distance = CosineTripletLoss(margin=0.1), CosineDistanceLoss()
    optimizer = torch.optim.Adam(encoder.parameters(), lr=1e-2)

    def losses() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        fa, fp, fn = encoder(u["a"]), encoder(u["p"]), encoder(u["n"])
        return triplet(fa, fp, fn), distance(fa, u["a"]), distance(fa, ground)

    with torch.no_grad():
        sem0, _, ground0 = losses()
    for _ in range(60):
        sem, cont, grounding = losses()
        optimizer.zero_grad()
        (sem + cont + grounding).backward()
        optimizer.step()
    with torch.no_grad():
        sem1, _, ground1 = losses()
    assert sem0 > 0 and sem1 < 0.5 * sem0
    assert ground1 < ground0


def _sphere(n: int, dim: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.nn.functional.normalize(torch.randn(n, dim, generator=g), dim=-1)


def test_distance_weighted_negatives_spread_over_distances_where_random_ones_crowd_at_the_mode() -> None:
    pool = _sphere(2000, 32, seed=0)
    anchors = pool[:300]
    rows = torch.arange(300)
    forbidden = torch.zeros(300, 2000, dtype=torch.bool)
    forbidden[rows, rows] = True  # the anchor itself
    forbidden[:, 300:340] = True  # "its class"
    dist = torch.cdist(anchors, pool)
    g = torch.Generator().manual_seed(1)

    def quartiles(picked: torch.Tensor) -> tuple[float, float]:
        q1, median, q3 = np.percentile(dist[rows, picked].numpy(), [25, 50, 75])
        return float(median), float(q3 - q1)

    random_median, random_iqr = quartiles(torch.randint(340, 2000, (300,), generator=g))
    for picked in (distance_weighted_negatives(anchors, pool, forbidden, generator=g),
                   sample_negatives(anchors, pool, forbidden, candidates=2000, generator=g)):
        assert not forbidden[rows, picked].any()
        median, iqr = quartiles(picked)
        assert iqr > 1.4 * random_iqr
        assert median < random_median - 0.15


def test_sampled_negatives_come_from_the_nearest_allowed_candidates_and_none_when_all_are_forbidden() -> None:
    pool = _sphere(500, 32, seed=2)
    anchors = pool[:20]
    forbidden = torch.zeros(20, 500, dtype=torch.bool)
    forbidden[torch.arange(20), torch.arange(20)] = True
    forbidden[19] = True  # nothing allowed for the last anchor
    picked = sample_negatives(anchors, pool, forbidden, candidates=5, generator=torch.Generator().manual_seed(0))
    assert picked[19].item() == -1
    nearest = (anchors @ pool.T).masked_fill(forbidden, float("-inf")).topk(5, dim=1).indices
    assert all(picked[i].item() in nearest[i].tolist() for i in range(19))


# --- the encoder -------------------------------------------------------------------------------------------


def test_the_encoder_gives_unit_vectors_for_any_name_and_its_input_is_the_mean_word_vector(vectors: WordVectors) -> None:
    encoder = DANEncoder(vectors, DANConfig(hidden=32))
    names = ["breast cancer", "zzqxv glorbitis", "", "!!!", "Breast  CANCER"]
    out = encoder.encode(names, batch_size=2)
    assert out.shape == (5, 16) and out.dtype == np.float32 and encoder.dim == 16 and encoder.kind == "dan"
    assert np.isfinite(out).all()
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    assert np.allclose(out[0], out[4])  # tokenised alike
    assert np.allclose(encoder.mean_vectors(names).numpy(), vectors.name_vectors(names), atol=1e-6)
    assert encoder.encode([]).shape == (0, 16)
    assert DANConfig.paper() == DANConfig(hidden=76_800, dropout=0.5)
    with pytest.raises(ValueError):
        DANConfig(hidden=0)


def test_a_saved_encoder_loads_back_exactly_by_its_kind(vectors: WordVectors, tmp_path: Path) -> None:
    torch.manual_seed(3)
    encoder = DANEncoder(vectors, DANConfig(hidden=48, dropout=0.5))
    names = ["ovarian cancer", "niddm", "unseenword syndrome"]
    before = encoder.encode(names)
    encoder.save(tmp_path / "enc")
    loaded = load_encoder(tmp_path / "enc")
    assert isinstance(loaded, DANEncoder) and loaded.config == encoder.config
    assert np.array_equal(loaded.encode(names), before)
    assert loaded.fingerprint() == encoder.fingerprint()
    with torch.no_grad():
        encoder.out.bias.add_(1.0)
    assert encoder.fingerprint() != loaded.fingerprint()


# --- hierarchy levels ---------------------------------------------------------------------------------------


def _toy_dag() -> HierarchySource:
    """R -> A, B; A -> A1, A2; B -> B1; A1 -> X; B1 -> X; X <-> Y (a cycle)."""
    parents = {"A": ("R",), "B": ("R",), "A1": ("A",), "A2": ("A",), "B1": ("B",), "X": ("A1", "B1", "Y"),
               "Y": ("X",)}
    names = {c: [c.lower(), f"{c.lower()} disease"] for c in ("R", "A", "B", "A1", "A2", "B1", "X", "Y")}
    return HierarchySource("toy", names, parents)


def test_level_classes_of_a_dag_with_a_cycle_are_the_ancestors_at_that_depth() -> None:
    source = _toy_dag()
    assert concept_depths(source) == {"A": 1, "B": 1, "A1": 2, "A2": 2, "B1": 2, "X": 3, "Y": 4}
    assert concept_classes(source, 1) == {"A1": ("A",), "A2": ("A",), "B1": ("B",), "X": ("A", "B"), "Y": ("A", "B")}
    assert concept_classes(source, 2) == {"X": ("A1", "B1"), "Y": ("A1", "B1")}
    assert concept_classes(source, 3) == {"Y": ("X",)}
    assert concept_classes(source, 0)["R"] == ("R",)
    level1 = level_classes(source, 1)
    assert "a" not in level1.names and "r disease" not in level1.names  # names at or above the level
    assert dict(zip(level1.names, level1.classes, strict=True))["x disease"] == ("A", "B")
    assert sorted(hypernyms(source, 1).names) == ["a", "a disease", "b", "b disease"]
    below_a = concept_classes(source, 1, top="A")
    assert below_a == {"X": ("A1",), "Y": ("A1",)}  # B1 is not below A


def test_a_hierarchy_whose_top_sits_on_a_cycle_needs_the_top_named() -> None:
    source = HierarchySource("loop", {"R": ["r"], "A": ["a"], "B": ["b"]}, {"A": ("R",), "B": ("A",), "R": ("B",)})
    with pytest.raises(ValueError, match="name the top"):
        concept_depths(source)
    assert concept_depths(source, top="R") == {"A": 1, "B": 2}


def test_one_name_per_class_is_held_out_and_a_class_of_one_keeps_its_name() -> None:
    data = LevelClasses.from_pairs([("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b"), ("c1", "c"), ("c2", "c")])
    train, held = hold_out_per_class(data, seed=0)
    assert sorted(c for cs in held.classes for c in cs) == ["a", "c"] and "b1" in train.names
    train, held = hold_out_per_class(data, at_least=3, seed=0)
    assert len(held) == 3 and {"b1"} <= set(train.names) and all(train.members.get(c) for c in "abc")
    _, held = hold_out_per_class(data, at_most=1, seed=0)
    assert len(held) == 1


# --- evaluations --------------------------------------------------------------------------------------------


def _encode_by(table: dict[str, list[float]]):  # type: ignore[no-untyped-def]
    def encode(texts):  # type: ignore[no-untyped-def]
        out = np.asarray([table[t] for t in texts], dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)
    return encode


def test_semantic_similarity_map_and_hypernym_mrr_on_hand_computed_rankings() -> None:
    encode = _encode_by({
        "q": [1.0, 0.0], "q2": [0.0, 1.0], "q3": [1.0, 1.0],
        "t1": [0.8, 0.6], "t2": [0.99, 0.1], "t3": [0.3, 0.95],
        "h_a": [0.5, 0.9], "h_b": [0.95, 0.2],
    })
    train_names, train_classes = ["t1", "t2", "t3"], [("a",), ("b",), ("a",)]
    # q (a) ranks t2 (b), t1 (a), t3 (a): AP = (1/2 + 2/3) / 2; q2 (b) ranks t3, t1, t2: its one relevant
    # name at rank 3, AP = 1/3; q3 belongs to both classes, every name is relevant: AP = 1.
    got = semantic_similarity_map(encode, train_names, train_classes, ["q", "q2", "q3"], [("a",), ("b",), ("a", "b")])
    assert got == pytest.approx(((1 / 2 + 2 / 3) / 2 + 1 / 3 + 1.0) / 3)
    # q ranks h_b, h_a: RR 1/2 for class a; q2 ranks h_a, h_b: RR 1/2 for class b; a class without any
    # hypernym name ("c") is skipped.
    mrr = hypernym_mrr(encode, ["q", "q2", "q3"], [("a",), ("b",), ("c",)], ["h_a", "h_b"], [("a",), ("b",)])
    assert mrr == pytest.approx(0.5)


# --- the recipe ----------------------------------------------------------------------------------------------


def _inputs(table: NameTable, out: Path, vectors_folder: Path, **extra):  # type: ignore[no-untyped-def]
    from linker.methods.base import TrainingInputs

    pairs = [("adult onset diabetes", "D003924"), ("kahler disease", "D009101"), ("breast carcinoma", "D001943"),
             ("niddm", "D003924"), ("ovarian tumour", "D010051"), ("colon cancer", "D015179")]
    return TrainingInputs(table=table.copy(), pairs=pairs, concept_counts={"D003924": 2}, out=out,
                          texts=CORPUS, word_vectors=vectors_folder, **extra)


def test_two_epochs_through_the_recipe_give_a_linker_that_loads_and_links(
    tiny_table: NameTable, vectors_folder: Path, tmp_path: Path
) -> None:
    from linker import recipe
    from linker.linker import Linker

    epochs: list[dict[str, object]] = []
    config = DANRecipeConfig(dan=DANConfig(hidden=32), max_epochs=2, threads=1, pool_size=16, candidates=4)
    folder, report = recipe.train("dan", _inputs(tiny_table, tmp_path / "dan", vectors_folder), config,
                                  recipe.TrainingCallbacks(on_epoch_end=epochs.append))
    assert report["method"] == "dan" and report["level"] == 0 and len(report["history"]) == 2
    assert report["best_epoch"] in (1, 2) and report["names_per_s"] > 0 and len(epochs) == 2
    assert report["classes"]["classes"] == len(tiny_table.concepts)
    linker = Linker.load(folder)
    assert linker.encoder is not None and linker.encoder.kind == "dan"
    top = linker.link_mentions(["breast cancer", "type 2 diabetes"], k=3)
    assert [c[0].concept_id for c in top] == ["D001943", "D003924"]


def test_a_level_one_run_stops_on_held_out_map_and_scores_hypernyms(
    tiny_table: NameTable, vectors_folder: Path, tmp_path: Path
) -> None:
    from linker import recipe

    config = DANRecipeConfig(dan=DANConfig(hidden=32), level=1, max_epochs=1, threads=1, validation_names=2)
    _, report = recipe.train("dan", _inputs(tiny_table, tmp_path / "dan1", vectors_folder,
                                            hierarchies=(_toy_dag(),)), config)
    assert report["hierarchy"] == "toy" and report["stopping_metric"] == "validation_map"
    assert report["classes"]["classes"] == 2 and report["validation_names"] == 2
    assert 0.0 <= report["validation_map"] <= 1.0 and 0.0 <= report["validation_hypernym_mrr"] <= 1.0
