"""Training objectives, one class per loss. Each docstring names the paper, the inputs and their shapes."""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["SynonymMarginalLoss", "HierarchicalMultiSimilarityLoss", "InBatchSynonymContrastiveLoss",
           "LogisticPairLoss", "CosineTripletLoss", "CosineDistanceLoss", "distance_weighted_negatives"]


class SynonymMarginalLoss(nn.Module):
    """Synonym marginalisation, BioSyn (Sung et al., ACL 2020, eq. 6-8).

    P(n|m) = softmax over the top-k candidates of S(m, n) = S_dense + λ·S_sparse; the loss is
    -log Σ_{n in top-k, CUI(n) = CUI(m)} P(n|m), averaged over the mentions that have at least one positive
    among their candidates (a mention with none gives no gradient; BioSyn's code masks it the same way,
    and iterative re-retrieval brings positives in later epochs).

    Curators' hard negatives (the workbench's addition): a candidate whose concept a curator rejected for
    this mention counts ``negative_weight`` times in the softmax's denominator (its logit raised by
    log(weight)), as if it were retrieved that many times, so the gradient that pushes it down is that many
    times stronger. With no negatives (or weight 1) the loss is the paper's.

    Inputs:
        scores    [b, k] float: S(m, n) for each mention and candidate
        targets   [b, k] bool or {0, 1}: 1 where the candidate's concept is the mention's gold concept
        negatives [b, k] bool, optional: 1 where a curator rejected the candidate's concept for the mention
    Returns a scalar.
    """

    def __init__(self, negative_weight: float = 2.0) -> None:
        super().__init__()
        if negative_weight < 1.0:
            raise ValueError(f"negative_weight must be at least 1, not {negative_weight}")
        self.negative_weight = negative_weight

    def forward(self, scores: torch.Tensor, targets: torch.Tensor, negatives: torch.Tensor | None = None) -> torch.Tensor:
        targets = targets.bool()  # [b, k]
        if negatives is not None and self.negative_weight != 1.0:
            boost = negatives.bool() & ~targets  # [b, k]; a concept both chosen and rejected stays a positive
            scores = scores + boost.to(scores.dtype) * math.log(self.negative_weight)
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


class LogisticPairLoss(nn.Module):
    """BNE's objectives as binary classification with a dot-product classifier (Phan et al., ACL 2019, sec. 3.2):

        l(f(s)·t(s)) + l(-f(s)·t(s_neg)),   l(x) = log(1 + e^-x) = softplus(-x)

    for an anchor encoding f(s) and its target t(s): a synonym's encoding (L_syn), its concept's vector g(c)
    (L_def) or its contextual vector q(s) (L_ctx). The negative is another row of the batch (the paper:
    "negative name sampled from a mini-batch"), one per anchor: row i takes row (i + shift) mod b for a
    random shift in 1..b-1, so it is never the anchor's own target. A negative that is a true synonym
    (two rows of one concept) is masked out by ``groups``.

    Inputs:
        anchors [b, d], targets [b, d]: unnormalised vectors (the classifier is the plain dot product)
        groups  [b] int, optional: the concept of each row; a negative of the same concept gives no loss
        shift   int, optional: the in-batch offset of the negatives (random when None)
    Returns a scalar: the mean over the batch of the positive and the negative term.
    """

    def forward(
        self, anchors: torch.Tensor, targets: torch.Tensor, groups: torch.Tensor | None = None,
        shift: int | None = None,
    ) -> torch.Tensor:
        b = anchors.shape[0]
        positive = nn.functional.softplus(-(anchors * targets).sum(-1))  # [b]
        if b < 2:
            return positive.mean()
        if shift is None:
            shift = int(torch.randint(1, b, (1,)).item())
        negatives = torch.roll(targets, shifts=-shift, dims=0)  # row i -> targets[(i + shift) % b]
        negative = nn.functional.softplus((anchors * negatives).sum(-1))  # [b]
        if groups is not None:
            negative = negative * (groups != torch.roll(groups, shifts=-shift, dims=0)).to(negative.dtype)
        return (positive + negative).mean()


class CosineTripletLoss(nn.Module):
    """The siamese triplet loss of DAN's semantic-similarity objective (Fivez et al., BioNLP 2021, eq. 2):

        L_sem = max(d(f(n), f(n_pos)) - d(f(n), f(n_neg)) + margin, 0),   d = 1 - cosine

    Inputs: anchors, positives, negatives [b, d] (any scale; cosine normalises). Returns the batch mean.
    """

    def __init__(self, margin: float = 0.1) -> None:
        super().__init__()
        self.margin = margin

    def forward(self, anchors: torch.Tensor, positives: torch.Tensor, negatives: torch.Tensor) -> torch.Tensor:
        pos = 1.0 - nn.functional.cosine_similarity(anchors, positives, dim=-1)  # [b]
        neg = 1.0 - nn.functional.cosine_similarity(anchors, negatives, dim=-1)  # [b]
        return torch.clamp(pos - neg + self.margin, min=0.0).mean()


class CosineDistanceLoss(nn.Module):
    """Mean cosine distance 1 - cos(f(n), v) to a fixed target: DAN's context objective (v = u_n, the name's
    mean word vector, eq. 4) and its grounding objective (v = (u_p + u_n) / 2, u_p the class prototype, eq. 5).

    Inputs: encodings [b, d], targets [b, d]. Returns the batch mean.
    """

    def forward(self, encodings: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return (1.0 - nn.functional.cosine_similarity(encodings, targets, dim=-1)).mean()


def distance_weighted_negatives(
    anchors: torch.Tensor,
    pool: torch.Tensor,
    forbidden: torch.Tensor,
    cutoff: float = 0.5,
    nonzero_loss_cutoff: float = 1.4,
    generator: torch.Generator | None = None,
    candidates: int | None = None,
) -> torch.Tensor:
    """Distance-weighted negative sampling (Wu et al., ICCV 2017, sec. 4), as DAN samples its negatives
    "over all training names".

    Pairwise distances of unit vectors in n dimensions follow q(d) ∝ d^(n-2) (1 - d²/4)^((n-3)/2); sampling a
    negative with weight 1/q(d) makes the sampled distances roughly uniform, so a batch sees hard, medium
    and easy negatives alike instead of the mass of near-orthogonal ones. Distances are clipped below at
    ``cutoff`` (the densities explode near 0) and names beyond ``nonzero_loss_cutoff`` (which give no
    loss) get no weight unless nothing else is left. ``candidates``: weigh only each anchor's nearest
    allowed names (the authors' code takes the 200 nearest; over a large pool of an untrained encoder's
    crowded encodings the weights alone pick nearly at random); None weighs the whole pool.

    Inputs:
        anchors   [b, n] and pool [p, n]: L2-normalised encodings
        forbidden [b, p] bool: pairs that are not negatives (the anchor itself, names of its class)
    Returns [b] int64: one pool index per anchor (-1 where every pool name is forbidden).
    """
    dim = anchors.shape[1]
    with torch.no_grad():
        sims = (anchors @ pool.T).masked_fill(forbidden, float("-inf"))  # [b, p]
        columns: torch.Tensor | None = None
        if candidates is not None and candidates < pool.shape[0]:
            sims, columns = sims.topk(max(1, int(candidates)), dim=1)  # [b, k]
        allowed = torch.isfinite(sims)
        dist = (2.0 - 2.0 * sims.clamp(-1.0, 1.0)).clamp(min=0.0).sqrt().clamp(min=cutoff)
        log_q = (dim - 2.0) * torch.log(dist) + ((dim - 3.0) / 2.0) * torch.log(
            (1.0 - 0.25 * dist.pow(2)).clamp(min=1e-8))
        log_w = (-log_q).masked_fill(~allowed, float("-inf"))
        useful = allowed & (dist < nonzero_loss_cutoff)
        # Only names within the loss-giving radius, unless an anchor has none: then any allowed name.
        log_w = torch.where(useful.any(dim=1, keepdim=True), log_w.masked_fill(~useful, float("-inf")), log_w)
        any_allowed = allowed.any(dim=1)  # [b]
        log_w = log_w - log_w.max(dim=1, keepdim=True).values.nan_to_num(0.0, neginf=0.0)
        weights = torch.where(torch.isfinite(log_w), torch.exp(log_w), torch.zeros_like(log_w))
        weights[~any_allowed] = 1.0  # placeholder row, replaced by -1 below
        picked = torch.multinomial(weights, 1, generator=generator).squeeze(1)
        if columns is not None:
            picked = columns.gather(1, picked.unsqueeze(1)).squeeze(1)
        return torch.where(any_allowed, picked, torch.full_like(picked, -1))
