"""Training objectives, one class per loss. Each docstring names the paper, the inputs and their shapes."""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["SynonymMarginalLoss", "HierarchicalMultiSimilarityLoss", "InBatchSynonymContrastiveLoss"]


class SynonymMarginalLoss(nn.Module):
    """Synonym marginalisation, BioSyn (Sung et al., ACL 2020, eq. 6-8).

    P(n|m) = softmax over the top-k candidates of S(m, n) = S_dense + λ·S_sparse; the loss is
    -log Σ_{n in top-k, CUI(n) = CUI(m)} P(n|m), averaged over the mentions that have at least one positive
    among their candidates (a mention with none gives no gradient; BioSyn's code masks it the same way,
    and iterative re-retrieval brings positives in later epochs).

    Inputs:
        scores  [b, k] float: S(m, n) for each mention and candidate
        targets [b, k] bool or {0, 1}: 1 where the candidate's concept is the mention's gold concept
    Returns a scalar.
    """

    def forward(self, scores: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        targets = targets.bool()  # [b, k]
        log_probs = torch.log_softmax(scores, dim=-1)  # [b, k]
        positive = log_probs.masked_fill(~targets, float("-inf"))  # [b, k]
        log_marginal = torch.logsumexp(positive, dim=-1)  # [b]
        has_positive = targets.any(dim=-1)  # [b]
        if not bool(has_positive.any()):
            return scores.sum() * 0.0  # keeps the graph; no positive anywhere in the batch
        return -log_marginal[has_positive].mean()


class HierarchicalMultiSimilarityLoss(nn.Module):
    """Multi-similarity loss at every distance threshold, HiPrBERT (Cai et al., 2023, section 3.5), built on
    the multi-similarity loss of Wang et al. (CVPR 2019).

    Every pair of a batch has an ordered distance (HiPrBERT: 0 synonym, 1 sibling, 2 parent-child, 3 other;
    see :mod:`linker.hierarchy.graph`). For each threshold d0 (default: every distance below the batch's
    largest) and anchor i, the terms at distance <= d0 are positives P_i(d0) and those further away are
    negatives N_i(d0), and

        L = Σ_d0 mean_i [ 1/α · log(1 + Σ_{p∈P_i} exp(-α (s_ip - λ))) + 1/β · log(1 + Σ_{n∈N_i} exp(β (s_in - λ))) ]

    with the paper's α = 2, β = 2, λ = 0.5. Hard pairs are mined per threshold (the paper's triplet miner,
    in Wang et al.'s pair form): a negative is kept if it is not at least ``margin`` less similar than the
    least similar positive, a positive if it is not at least ``margin`` more similar than the most similar
    negative. The paper keeps triplets whose similarity gap is under 0.25, hence ``margin`` 0.25.

    Inputs:
        embeddings [b, h] float, L2-normalised (cosine similarities)
        distances  [b, b] int64 ordered distances; a negative entry marks a pair that is not compared
    Returns a scalar: the sum over thresholds of the mean over anchors that have a mined pair there.
    """

    def __init__(self, alpha: float = 2.0, beta: float = 2.0, base: float = 0.5, margin: float = 0.25,
                 thresholds: tuple[int, ...] | None = None) -> None:
        super().__init__()
        self.alpha = alpha
        self.beta = beta
        self.base = base
        self.margin = margin
        self.thresholds = thresholds

    def forward(self, embeddings: torch.Tensor, distances: torch.Tensor) -> torch.Tensor:
        sim = embeddings @ embeddings.T  # [b, b]
        eye = torch.eye(len(sim), dtype=torch.bool, device=sim.device)
        compared = (distances >= 0) & ~eye  # [b, b]
        levels = self.thresholds if self.thresholds is not None else range(int(distances.max().item()))
        total = sim.sum() * 0.0  # keeps the graph when no threshold has a mined pair
        for d0 in levels:
            total = total + self.threshold_loss(sim, compared & (distances <= d0), compared & (distances > d0))
        return total

    def threshold_loss(self, sim: torch.Tensor, pos_mask: torch.Tensor, neg_mask: torch.Tensor) -> torch.Tensor:
        """The multi-similarity loss of one threshold: ``pos_mask``/``neg_mask`` [b, b] bool."""
        inf = torch.tensor(float("inf"), device=sim.device, dtype=sim.dtype)
        with torch.no_grad():
            hardest_pos = torch.where(pos_mask, sim, inf).min(dim=1, keepdim=True).values  # [b, 1]
            hardest_neg = torch.where(neg_mask, sim, -inf).max(dim=1, keepdim=True).values  # [b, 1]
            mined_neg = neg_mask & (sim + self.margin > hardest_pos)  # [b, b]
            mined_pos = pos_mask & (sim - self.margin < hardest_neg)  # [b, b]
        pos_term = torch.where(mined_pos, torch.exp(-self.alpha * (sim - self.base)), torch.zeros_like(sim))
        neg_term = torch.where(mined_neg, torch.exp(self.beta * (sim - self.base)), torch.zeros_like(sim))
        loss = torch.log1p(pos_term.sum(1)) / self.alpha + torch.log1p(neg_term.sum(1)) / self.beta  # [b]
        active = mined_pos.any(1) | mined_neg.any(1)  # [b]
        if not bool(active.any()):
            return sim.sum() * 0.0
        return loss[active].mean()


class InBatchSynonymContrastiveLoss(HierarchicalMultiSimilarityLoss):
    """Multi-similarity loss over in-batch synonym sets, as in SapBERT (Liu et al., NAACL 2021), which
    uses the multi-similarity loss of Wang et al. (CVPR 2019) with online hard-pair mining: the d0 = 0 case
    of :class:`HierarchicalMultiSimilarityLoss` with two distances, same concept or not.

    Every other name in the batch with the same concept is a positive, every name of another concept a
    negative; pairs are mined as described there. Defaults α = 1, β = 60, λ = 0.5, margin 0.2 follow
    SapBERT's released training code.

    Inputs:
        embeddings [b, h] float, L2-normalised (cosine similarities)
        labels     [b] int64 concept indices; a batch is normally built as pairs of synonyms
    Returns a scalar (mean over anchors that have at least one mined pair).
    """

    def __init__(self, alpha: float = 1.0, beta: float = 60.0, base: float = 0.5, margin: float = 0.2) -> None:
        super().__init__(alpha, beta, base, margin, thresholds=(0,))

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        different = (labels.unsqueeze(0) != labels.unsqueeze(1)).long()  # [b, b]: 0 synonym, 1 not
        return super().forward(embeddings, different)
