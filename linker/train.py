"""A small trainer that knows nothing of the model, and one config dataclass per training method.

The trainer drives a :class:`TrainingTask`: the task owns the module, builds its batches for each epoch
(BioSyn re-retrieves candidates there) and turns a batch into a loss; the trainer owns the device (chosen
once), the optimiser (AdamW over the task's parameter groups), gradient clipping, optional AMP on CUDA,
seeding, checkpoints, a tqdm bar on a terminal, and the progress callbacks a Celery task stores in the
database: ``on_step(progress)`` and ``on_epoch_end(progress)`` with ``progress`` a plain dict::

    {"phase", "epoch", "epochs", "step", "total_steps", "loss", "mentions_per_s", "elapsed_s", ...}
"""

from __future__ import annotations

import math
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn

# The one device choice (LINKER_DEVICE, else CUDA where there is one); index builds and linking use it too.
from linker.device import choose_device

__all__ = [
    "TrainerConfig",
    "BioSynConfig",
    "SynonymPretrainConfig",
    "TrainingTask",
    "Trainer",
    "ProgressCallback",
    "choose_device",
    "seed_everything",
    "SCOPES",
    "ScopeDefaults",
    "SCOPE_DEFAULTS",
    "STUDENT_LAYERS",
    "resolve_scope",
]

ProgressCallback = Callable[[dict[str, Any]], None]


@dataclass
class TrainerConfig:
    lr: float = 1e-5
    weight_decay: float = 0.01
    epochs: int = 1
    batch_size: int = 16
    grad_clip: float = 1.0
    seed: int = 13
    amp: bool = True  # only on CUDA; ignored on CPU
    num_threads: int = 2  # torch CPU threads (this machine: 2 shared cores)
    progress_bar: bool | None = None  # None: only when stderr is a terminal


@dataclass
class BioSynConfig(TrainerConfig):
    """BioSyn (Sung et al., ACL 2020, section 4.1) defaults: k 20, α 0.5, lr 1e-5, weight decay 0.01,
    batch 16, max length 25, 10 epochs, λ learned from 0.

    ``train_scope`` (see :data:`SCOPE_DEFAULTS` for each scope's epochs and learning rate):

    - ``"full"`` is the paper: the whole transformer is fine-tuned, each epoch re-encodes the dictionary and
      every step encodes the query and its k candidates with gradients. The GPU choice.
    - ``"student"`` (the CPU choice) is the same method on a 3-layer student of the base model (layers
      :data:`STUDENT_LAYERS`, see :meth:`TransformerEncoder.keep_layers`): on a 2-core CPU it trains at ~150
      names/s and re-encodes the 73K MEDIC names in ~80 s, so an NCBI epoch takes ~4.5 minutes, and the
      index it builds encodes twice as fast as MiniLM-L6. NCBI dev accuracy peaks after the first epoch.
    - ``"head"`` freezes the transformer, caches its pooled features of every name and query, and trains a
      residual projection head on top with the BioSyn objective: seconds per epoch, but the head overfits
      the ~1,500 distinct training queries (NCBI dev Acc@1 0.892 against 0.898 untrained).
    """

    lr: float = 1e-5
    weight_decay: float = 0.01
    epochs: int = 10
    batch_size: int = 16
    topk: int = 20
    dense_ratio: float = 0.5  # α: share of the top-k taken from dense retrieval
    max_length: int = 25
    initial_sparse_weight: float = 0.0  # λ at the start; learned
    # BioSyn's released code gives λ its own learning rate (0.01 over ~3,000 steps); with ~900 steps here
    # (deduplicated NCBI queries) it is doubled so that λ can reach the range the dense scale needs.
    sparse_weight_lr: float = 0.02
    train_scope: str = "full"  # "full" (the paper), "student" (3-layer student, CPU) or "head"
    head_lr: float = 1e-3  # the head is new and small: a larger learning rate than the transformer's
    head_hidden: int = 768
    feature_cache: str | None = None  # folder for the frozen transformer's features
    # Dense scores are cosines of L2-normalised vectors times this fixed scale (BioSyn uses raw [CLS] inner
    # products, whose scale BERT learns; a fixed inverse temperature, as in SapBERT-style training, is more
    # stable for a small model trained for a few epochs).
    dense_scale: float = 20.0
    reencode_batch_size: int = 512
    quantized_reencode: bool = False  # full scope on CPU: re-retrieval with an int8 copy of the encoder
    dedupe_queries: bool = True  # identical (query, concept) training pairs are one example
    # Curators' hard negatives: a concept rejected for a training query is put into its candidate set every
    # epoch (if retrieval did not bring it) and counts this many times in the softmax (SynonymMarginalLoss).
    negative_weight: float = 2.0


@dataclass
class SynonymPretrainConfig(TrainerConfig):
    """SapBERT-style synonym pre-training (Liu et al., NAACL 2021): lr 2e-5, weight decay 0.01, one epoch,
    multi-similarity loss (α 1, β 60, λ 0.5, mining margin 0.2). SapBERT uses 512-pair batches over all
    UMLS synonym pairs on a GPU; here a CPU-sized batch and a random subset of pairs (one pair per name,
    at most ``max_pairs``). ``train_scope`` as in :class:`BioSynConfig`; ``"head"`` trains the projection
    head on cached transformer features instead."""

    lr: float = 2e-5
    weight_decay: float = 0.01
    epochs: int = 3
    batch_size: int = 256  # pairs per batch, i.e. 2 x 256 names
    max_length: int = 25
    max_pairs: int = 0  # 0: one pair per name of every concept with >= 2 names
    train_scope: str = "full"
    head_lr: float = 1e-3
    head_hidden: int = 768
    feature_cache: str | None = None
    ms_alpha: float = 1.0
    ms_beta: float = 60.0
    ms_base: float = 0.5
    ms_margin: float = 0.2


SCOPES = ("full", "student", "head")
# The student keeps the embeddings and layers 0, 2 and 5 of MiniLM-L6 (see TransformerEncoder.keep_layers).
STUDENT_LAYERS: tuple[int, ...] = (0, 2, 5)


@dataclass(frozen=True)
class ScopeDefaults:
    """What a scope trains with unless the caller says otherwise."""

    epochs: int  # BioSyn epochs
    lr: float  # transformer learning rate
    pretrain_epochs: int
    pretrain_max_pairs: int  # 0: every synonym pair
    layers: tuple[int, ...] | None  # base-model layers kept (None: all)


SCOPE_DEFAULTS: dict[str, ScopeDefaults] = {
    # The paper's BioSyn settings; SapBERT-style pre-training over every synonym pair.
    "full": ScopeDefaults(epochs=10, lr=1e-5, pretrain_epochs=3, pretrain_max_pairs=0, layers=None),
    # Measured on NCBI dev (2-core CPU): one pre-training epoch over 20K pairs (~5 min) and one BioSyn epoch
    # (~4.5 min) give Acc@1 0.898 / Acc@5 0.981; a second BioSyn epoch gave 0.895 / 0.982. A 3-layer model
    # trained for a handful of steps takes the larger learning rate.
    "student": ScopeDefaults(epochs=1, lr=2e-5, pretrain_epochs=1, pretrain_max_pairs=20000, layers=STUDENT_LAYERS),
    "head": ScopeDefaults(epochs=10, lr=1e-5, pretrain_epochs=3, pretrain_max_pairs=0, layers=None),
}


def resolve_scope(scope: str, device: torch.device | str | None = None) -> str:
    """``"auto"`` -> ``"full"`` on CUDA (the paper), ``"student"`` on a CPU; other scopes are checked."""
    if scope == "auto":
        return "full" if choose_device(str(device) if device else None).type == "cuda" else "student"
    if scope not in SCOPES:
        raise ValueError(f"train_scope must be auto or one of {', '.join(SCOPES)}, not {scope!r}")
    return scope


class TrainingTask(Protocol):
    """What the trainer needs from a method; the method knows its model, the trainer knows nothing of it."""

    module: nn.Module

    def parameter_groups(self) -> list[dict[str, Any]]:
        """AdamW parameter groups (a group may override ``lr``/``weight_decay``)."""
        ...

    def prepare_epoch(self, epoch: int, device: torch.device) -> Sequence[Any]:
        """The batches of ``epoch`` (0-based); BioSyn re-retrieves its candidates here."""
        ...

    def batch_loss(self, batch: Any, device: torch.device) -> tuple[torch.Tensor, int]:
        """(scalar loss, number of training items in the batch)."""
        ...

    def save(self, folder: Path) -> None:
        """Write a checkpoint into ``folder``."""
        ...


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


class Trainer:
    def __init__(
        self,
        config: TrainerConfig,
        device: torch.device | str | None = None,
        checkpoint_dir: str | Path | None = None,
        on_step: ProgressCallback | None = None,
        on_epoch_end: ProgressCallback | None = None,
        phase: str = "train",
        log_every: int = 10,
    ) -> None:
        self.config = config
        self.device = choose_device(str(device) if device is not None else None)
        self.checkpoint_dir = Path(checkpoint_dir) if checkpoint_dir is not None else None
        self.on_step = on_step
        self.on_epoch_end = on_epoch_end
        self.phase = phase
        self.log_every = max(1, log_every)
        self.history: list[dict[str, Any]] = []

    def fit(self, task: TrainingTask) -> list[dict[str, Any]]:
        cfg = self.config
        seed_everything(cfg.seed)
        if self.device.type == "cpu" and cfg.num_threads > 0:
            torch.set_num_threads(cfg.num_threads)
        task.module.to(self.device)
        optimizer = torch.optim.AdamW(task.parameter_groups(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        use_amp = cfg.amp and self.device.type == "cuda"
        scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
        show_bar = cfg.progress_bar if cfg.progress_bar is not None else sys.stderr.isatty()
        step = 0
        total_steps = 0
        started = time.perf_counter()
        for epoch in range(cfg.epochs):
            task.module.eval()
            prep_start = time.perf_counter()
            batches = task.prepare_epoch(epoch, self.device)
            prepare_s = time.perf_counter() - prep_start
            if epoch == 0:
                total_steps = len(batches) * cfg.epochs
            task.module.train()
            epoch_loss, epoch_items, train_s = 0.0, 0, 0.0
            window_items, window_t = 0, time.perf_counter()
            bar = None
            if show_bar:
                from tqdm import tqdm

                bar = tqdm(total=len(batches), desc=f"{self.phase} {epoch + 1}/{cfg.epochs}", unit="batch")
            for batch in batches:
                t0 = time.perf_counter()
                loss_value, items = self._step(task, batch, optimizer, scaler, use_amp)
                train_s += time.perf_counter() - t0
                step += 1
                epoch_loss += loss_value * items
                epoch_items += items
                window_items += items
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(loss=f"{loss_value:.4f}")
                if self.on_step is not None and (step % self.log_every == 0 or step == total_steps):
                    now = time.perf_counter()
                    self.on_step(
                        {
                            "phase": self.phase,
                            "epoch": epoch + 1,
                            "epochs": cfg.epochs,
                            "step": step,
                            "total_steps": total_steps,
                            "loss": loss_value,
                            "mentions_per_s": window_items / max(now - window_t, 1e-9),
                            "elapsed_s": now - started,
                        }
                    )
                    window_items, window_t = 0, now
            if bar is not None:
                bar.close()
            summary = {
                "phase": self.phase,
                "epoch": epoch + 1,
                "epochs": cfg.epochs,
                "step": step,
                "total_steps": total_steps,
                "loss": epoch_loss / max(epoch_items, 1),
                "mentions_per_s": epoch_items / max(train_s, 1e-9),
                "items": epoch_items,
                "prepare_s": prepare_s,
                "train_s": train_s,
                "elapsed_s": time.perf_counter() - started,
            }
            summary.update(getattr(task, "epoch_metrics", lambda: {})())
            self.history.append(summary)
            if self.checkpoint_dir is not None:
                task.save(self.checkpoint_dir / f"epoch-{epoch + 1}")
            if self.on_epoch_end is not None:
                self.on_epoch_end(summary)
        task.module.eval()
        return self.history

    def _step(self, task: TrainingTask, batch: Any, optimizer: torch.optim.Optimizer, scaler: torch.amp.GradScaler,
              use_amp: bool) -> tuple[float, int]:
        """One optimisation step on ``batch``: its loss and its number of training items."""
        with torch.autocast(self.device.type, enabled=use_amp):
            loss, items = task.batch_loss(batch, self.device)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        if self.config.grad_clip > 0:
            scaler.unscale_(optimizer)
            params = [p for g in optimizer.param_groups for p in g["params"]]
            torch.nn.utils.clip_grad_norm_(params, self.config.grad_clip)
        scaler.step(optimizer)
        scaler.update()
        return float(loss.detach()), items


def batched(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)] if size > 0 else [items]


def steps_per_epoch(n_items: int, batch_size: int) -> int:
    return math.ceil(n_items / batch_size)
