"""Hierarchy-aware contrastive pre-training of the transformer name encoder (HiPrBERT, Cai et al., 2023).

:class:`HierarchyPretrainTask` is a :class:`linker.train.TrainingTask`: each epoch it builds batches with
:func:`linker.hierarchy.sampling.epoch_batches`, and a batch's loss is
:class:`linker.losses.HierarchicalMultiSimilarityLoss` over the names' encodings and their pair distances.
With ``distances="synonym"`` the same batches train with synonymy alone (distance 0 against everything
else, the SapBERT-style baseline of the benchmark), so the two differ only in what the loss is told.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from linker.encoders.transformer import TransformerEncoder
from linker.hierarchy.graph import OTHER, SYNONYM, HierarchySource
from linker.hierarchy.sampling import Batch, epoch_batches
from linker.losses import HierarchicalMultiSimilarityLoss
from linker.train import TrainerConfig

__all__ = ["HierarchyPretrainConfig", "HierarchyPretrainTask", "DISTANCE_MODES"]

DISTANCE_MODES = ("hierarchy", "synonym")


@dataclass
class HierarchyPretrainConfig(TrainerConfig):
    """HiPrBERT's settings (section 4.1): AdamW, lr 2e-5, weight decay 0.01, one epoch, batch 256 terms;
    multi-similarity α 2, β 2, λ 0.5, mining margin 0.25. ``max_batches`` caps an epoch (0: every anchor of
    every source once) so that a CPU run fits its time; ``distances`` is ``hierarchy`` (the paper) or
    ``synonym`` (the same batches, synonymy only)."""

    lr: float = 2e-5
    weight_decay: float = 0.01
    epochs: int = 1
    batch_size: int = 256  # terms (names) per batch
    max_length: int = 25
    max_batches: int = 0
    alpha: float = 2.0
    beta: float = 2.0
    base: float = 0.5
    margin: float = 0.25
    distances: str = "hierarchy"


class HierarchyPretrainTask:
    """Fine-tunes ``encoder`` in place on batches of the sources' names."""

    def __init__(self, encoder: TransformerEncoder, sources: Sequence[HierarchySource], config: HierarchyPretrainConfig) -> None:
        if config.distances not in DISTANCE_MODES:
            raise ValueError(f"distances must be one of {', '.join(DISTANCE_MODES)}, not {config.distances!r}")
        self.module: torch.nn.Module = encoder
        self.encoder = encoder
        self.sources = list(sources)
        self.config = config
        thresholds = (SYNONYM,) if config.distances == "synonym" else None
        self.loss_fn = HierarchicalMultiSimilarityLoss(config.alpha, config.beta, config.base, config.margin, thresholds)
        self.batches_per_epoch: list[int] = []

    def parameter_groups(self) -> list[dict[str, Any]]:
        return [{"params": [p for p in self.encoder.parameters() if p.requires_grad]}]

    def prepare_epoch(self, epoch: int, device: torch.device) -> list[Batch]:
        batches = epoch_batches(self.sources, self.config.batch_size, self.config.seed + epoch, self.config.max_batches)
        self.batches_per_epoch.append(len(batches))
        return batches

    def distances(self, batch: Batch) -> np.ndarray:
        """[n, n] distances of the batch's terms; synonym mode keeps only same concept (0) or not (3)."""
        concepts = [t.concept for t in batch.terms]
        if self.config.distances == "synonym":
            same = np.asarray(concepts)[:, None] == np.asarray(concepts)[None, :]
            return np.where(same, SYNONYM, OTHER).astype(np.int64)
        return self.sources[batch.source].distance_matrix(concepts)

    def batch_loss(self, batch: Batch, device: torch.device) -> tuple[torch.Tensor, int]:
        texts = [t.text for t in batch.terms]
        tokens = {k: v.to(device) for k, v in self.encoder.tokenize(texts, self.config.max_length).items()}
        distances = torch.as_tensor(self.distances(batch), device=device)
        return self.loss_fn(self.encoder(tokens), distances), len(texts)

    def save(self, folder: Path) -> None:
        self.encoder.save(folder)
