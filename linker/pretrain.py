"""SapBERT-style synonym pre-training (Liu et al., NAACL 2021) over a dictionary's synonym sets.

The base model (MiniLM) was never trained on biomedical names, so before BioSyn it is pulled towards the
dictionary's synonymy: batches of (name, another name of the same concept) pairs from concepts with at
least two distinct normalised names, multi-similarity loss with in-batch hard-pair mining.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from linker.dictionary import NameTable
from linker.encoders.transformer import TransformerEncoder, cached_features
from linker.losses import InBatchSynonymContrastiveLoss
from linker.train import SCOPES, ProgressCallback, SynonymPretrainConfig, Trainer

__all__ = ["synonym_pairs", "SynonymPretrainTask", "pretrain_synonyms"]


def synonym_pairs(table: NameTable, max_pairs: int = 0, seed: int = 13) -> list[tuple[str, str, int]]:
    """(name, synonym, concept label) with one random partner per name; at most ``max_pairs`` (0: all)."""
    rng = random.Random(seed)
    by_concept: dict[str, list[str]] = {}
    for name, cid in zip(table.names, table.concept_ids, strict=True):
        names = by_concept.setdefault(cid, [])
        if name not in names:
            names.append(name)
    pairs: list[tuple[str, str, int]] = []
    for label, names in enumerate(by_concept.values()):
        if len(names) < 2:
            continue
        for i, name in enumerate(names):
            j = rng.randrange(len(names) - 1)
            pairs.append((name, names[j if j < i else j + 1], label))
    rng.shuffle(pairs)
    return pairs[:max_pairs] if max_pairs > 0 else pairs


class SynonymPretrainTask:
    def __init__(
        self, encoder: TransformerEncoder, pairs: Sequence[tuple[str, str, int]], config: SynonymPretrainConfig
    ) -> None:
        self.module: torch.nn.Module = encoder
        self.encoder = encoder
        self.pairs = list(pairs)
        self.config = config
        self.loss_fn = InBatchSynonymContrastiveLoss(config.ms_alpha, config.ms_beta, config.ms_base, config.ms_margin)
        if config.train_scope not in SCOPES:
            raise ValueError(f"train_scope must be one of {', '.join(SCOPES)}, not {config.train_scope!r}")
        self.head_only = config.train_scope == "head"
        self._features: np.ndarray | None = None
        self._row: dict[str, int] = {}
        if self.head_only:
            if encoder.head is None:
                encoder.add_head(config.head_hidden)
            encoder.model.requires_grad_(False)
            names = sorted({n for a, b, _ in self.pairs for n in (a, b)})
            self._row = {n: i for i, n in enumerate(names)}
            self._features = cached_features(encoder, names, config.feature_cache)

    def parameter_groups(self) -> list[dict[str, Any]]:
        if self.head_only:
            assert self.encoder.head is not None
            return [{"params": list(self.encoder.head.parameters()), "lr": self.config.head_lr}]
        return [{"params": list(self.encoder.parameters())}]

    def prepare_epoch(self, epoch: int, device: torch.device) -> list[np.ndarray]:
        order = list(range(len(self.pairs)))
        random.Random(self.config.seed + epoch).shuffle(order)
        bs = self.config.batch_size
        return [np.asarray(order[i : i + bs], dtype=np.int64) for i in range(0, len(order), bs)]

    def batch_loss(self, batch: np.ndarray, device: torch.device) -> tuple[torch.Tensor, int]:
        pairs = [self.pairs[i] for i in batch]
        texts = [p[0] for p in pairs] + [p[1] for p in pairs]
        labels = torch.as_tensor([p[2] for p in pairs] * 2, device=device)
        if self._features is not None:
            feats = torch.as_tensor(self._features[[self._row[t] for t in texts]], device=device)  # [2b, h]
            return self.loss_fn(self.encoder.project(feats), labels), len(texts)
        tokens = {k: v.to(device) for k, v in self.encoder.tokenize(texts, self.config.max_length).items()}
        return self.loss_fn(self.encoder(tokens), labels), len(texts)

    def save(self, folder: Path) -> None:
        if self.head_only and self.encoder.head is not None:
            folder.mkdir(parents=True, exist_ok=True)
            torch.save(self.encoder.head.state_dict(), folder / "head.pt")
        else:
            self.encoder.save(folder)


def pretrain_synonyms(
    encoder: TransformerEncoder,
    table: NameTable,
    config: SynonymPretrainConfig | None = None,
    checkpoint_dir: str | Path | None = None,
    on_step: ProgressCallback | None = None,
    on_epoch_end: ProgressCallback | None = None,
    device: str | None = None,
) -> list[dict[str, Any]]:
    """Fine-tune ``encoder`` in place on the table's synonym pairs; ``mentions_per_s`` counts names."""
    config = config or SynonymPretrainConfig()
    pairs = synonym_pairs(table, config.max_pairs, config.seed)
    if not pairs:
        return []
    task = SynonymPretrainTask(encoder, pairs, config)
    trainer = Trainer(config, device=device, checkpoint_dir=checkpoint_dir, on_step=on_step,
                      on_epoch_end=on_epoch_end, phase="synonym-pretrain")
    history = trainer.fit(task)
    encoder.cpu()
    return history
