from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from linker.biosyn import BioSynModel
from linker.encoders import TransformerEncoder
from linker.losses import InBatchSynonymContrastiveLoss, SynonymMarginalLoss


def test_marginal_loss_is_minus_log_of_the_summed_positive_probability() -> None:
    scores = torch.tensor([[2.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    targets = torch.tensor([[1, 1, 0], [0, 0, 1]])
    p = torch.softmax(scores, -1)
    expected = -(torch.log(p[0, 0] + p[0, 1]) + torch.log(p[1, 2])) / 2
    assert SynonymMarginalLoss()(scores, targets).item() == pytest.approx(expected.item(), rel=1e-6)


def test_mentions_without_a_positive_candidate_give_no_loss() -> None:
    scores = torch.tensor([[1.0, 0.0], [0.0, 5.0]], requires_grad=True)
    loss = SynonymMarginalLoss()(scores, torch.tensor([[1, 0], [0, 0]]))
    assert loss.item() == pytest.approx(-math.log(torch.softmax(torch.tensor([1.0, 0.0]), 0)[0].item()))
    loss.backward()
    assert scores.grad is not None and (scores.grad[1] == 0).all()


# Toy BioSyn problem: each mention with k = 4 candidate names, the gold synonyms marked.
MENTIONS = ["heart attack", "high blood sugar"]
CANDIDATES = [
    ["myocardial infarction", "cardiac infarction", "heart failure", "angina pectoris"],
    ["hyperglycemia", "hypoglycemia", "hypertension", "diabetes insipidus"],
]
GOLD = torch.tensor([[1, 1, 0, 0], [1, 0, 0, 0]], dtype=torch.bool)
SPARSE = torch.tensor([[0.1, 0.2, 0.5, 0.3], [0.1, 0.1, 0.3, 0.2]])


def _marginal(model: BioSynModel) -> torch.Tensor:
    enc = model.encoder
    q = enc(enc.tokenize(MENTIONS))  # [2, h]
    c = enc(enc.tokenize([n for row in CANDIDATES for n in row])).view(2, 4, -1)  # [2, 4, h]
    p = torch.softmax(model.score(q, c, SPARSE), dim=-1)
    return (p * GOLD).sum(-1)  # [2]


def test_a_few_steps_of_synonym_marginalisation_raise_the_gold_probability(minilm: TransformerEncoder) -> None:
    torch.manual_seed(0)
    model = BioSynModel(copy.deepcopy(minilm), initial_sparse_weight=0.0, dense_scale=20.0)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    loss_fn = SynonymMarginalLoss()
    with torch.no_grad():
        before = _marginal(model)
    for _ in range(5):
        enc = model.encoder
        q = enc(enc.tokenize(MENTIONS))
        c = enc(enc.tokenize([n for row in CANDIDATES for n in row])).view(2, 4, -1)
        loss = loss_fn(model.score(q, c, SPARSE), GOLD)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        after = _marginal(model)
    assert (after > before).all(), (before, after)
    assert after.mean() > 0.9


def test_multi_similarity_pulls_synonyms_together(minilm: TransformerEncoder) -> None:
    torch.manual_seed(0)
    enc = copy.deepcopy(minilm)
    enc.train()
    names = ["myocardial infarction", "heart attack", "hyperglycemia", "high blood sugar", "asthma", "bronchial asthma"]
    labels = torch.tensor([0, 0, 1, 1, 2, 2])
    loss_fn = InBatchSynonymContrastiveLoss()
    optimizer = torch.optim.AdamW(enc.parameters(), lr=5e-5)

    def positive_similarity() -> float:
        v = enc.encode(names)
        return float(np.mean([v[i] @ v[i + 1] for i in range(0, 6, 2)]))

    before = positive_similarity()
    losses = []
    for _ in range(5):
        loss = loss_fn(enc(enc.tokenize(names)), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert positive_similarity() > before
    assert losses[-1] < losses[0]


def test_multi_similarity_without_mined_pairs_is_zero() -> None:
    emb = torch.nn.functional.normalize(torch.tensor([[1.0, 0.0], [0.0, 1.0]]), dim=-1)
    assert InBatchSynonymContrastiveLoss()(emb, torch.tensor([0, 1])).item() == 0.0
