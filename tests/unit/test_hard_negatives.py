"""Curators' hard negatives in BioSyn: a rejected concept enters the query's candidate set and weighs up in
the loss (issue #15: "hard negatives change the training loss on a toy set")."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import torch

from linker.biosyn import BioSynModel, BioSynTask, make_training_queries
from linker.dictionary import NameTable
from linker.encoders import TransformerEncoder
from linker.losses import SynonymMarginalLoss
from linker.sparse import SparseEncoder
from linker.train import BioSynConfig


def test_a_query_carries_the_concepts_rejected_for_its_text_but_never_its_own(tiny_table: NameTable) -> None:
    queries = make_training_queries(
        [("adult diabetes", "D003924"), ("breast carcinoma", "D001943")], tiny_table,
        negatives=[("adult diabetes", "D003920"), ("adult diabetes", "D003924"), ("no such text", "D009101")],
    )
    by_text = {q.text: q for q in queries}
    assert by_text["adult diabetes"].negatives == frozenset({"D003920"})  # the link wins over a rejection
    assert by_text["breast carcinoma"].negatives == frozenset()


def test_the_loss_weighs_a_rejected_candidate_up_and_is_the_papers_without_one() -> None:
    scores = torch.tensor([[2.0, 1.0, 0.5]])
    targets = torch.tensor([[True, False, False]])
    negatives = torch.tensor([[False, True, False]])
    loss = SynonymMarginalLoss(negative_weight=2.0)
    plain = loss(scores, targets)
    # By hand: -log(e^2 / (e^2 + 2·e^1 + e^0.5)).
    expected = -np.log(np.exp(2.0) / (np.exp(2.0) + 2 * np.exp(1.0) + np.exp(0.5)))
    assert float(loss(scores, targets, negatives)) == pytest.approx(expected, rel=1e-6)
    assert float(loss(scores, targets, negatives)) > float(plain)
    assert float(loss(scores, targets, torch.zeros_like(negatives))) == pytest.approx(float(plain))
    # A concept both chosen and rejected stays a positive (not boosted).
    assert float(loss(scores, targets, targets)) == pytest.approx(float(plain))
    with pytest.raises(ValueError, match="at least 1"):
        SynonymMarginalLoss(negative_weight=0.5)


def test_biosyn_brings_a_rejected_concept_into_the_candidates_and_the_loss_changes(
    minilm: TransformerEncoder, tiny_table: NameTable, tmp_path: Path
) -> None:
    sparse = SparseEncoder().fit(tiny_table.names)
    pairs = [("adult diabetes", "D003924"), ("breast carcinoma", "D001943")]
    # Huntington disease is nothing like "adult diabetes": retrieval of 3 candidates does not bring it.
    rejected = [("adult diabetes", "D006816")]
    cfg = BioSynConfig(topk=3, epochs=1, feature_cache=str(tmp_path), train_scope="head", batch_size=2)

    def loss_of(negatives: list[tuple[str, str]]) -> tuple[float, BioSynTask]:
        torch.manual_seed(0)
        encoder = copy.deepcopy(minilm)
        encoder.add_head(cfg.head_hidden)
        model = BioSynModel(encoder, dense_scale=cfg.dense_scale)
        task = BioSynTask(model, tiny_table, sparse, make_training_queries(pairs, tiny_table, negatives=negatives), cfg)
        task.prepare_epoch(0, torch.device("cpu"))
        with torch.no_grad():
            loss, _ = task.batch_loss(np.arange(2), torch.device("cpu"))
        return float(loss), task

    plain, plain_task = loss_of([])
    hard, hard_task = loss_of(rejected)
    assert plain_task._data is not None and hard_task._data is not None
    concepts = np.asarray(tiny_table.concept_ids, dtype=object)
    assert "D006816" not in set(concepts[plain_task._data.candidates[0]])
    assert "D006816" in set(concepts[hard_task._data.candidates[0]])  # brought in, in place of the last one
    assert hard_task._data.targets[0].any()  # the positive stayed
    assert hard_task.epoch_metrics()["hard_negatives_brought_in"] == 1.0
    assert hard != pytest.approx(plain)
