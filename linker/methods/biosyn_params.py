"""What a person sets for a BioSyn run: the paper's hyperparameters (:class:`linker.train.BioSynConfig`), the
training scope and synonym pre-training around them. ``epochs``, ``lr``, ``pretrain_epochs`` and
``pretrain_max_pairs`` at 0 are the scope's default (:data:`linker.train.SCOPE_DEFAULTS`), resolved once the
device is known. :func:`linker.methods.biosyn.biosyn_config` makes the recipe's config from them."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from linker.methods.params import delay_param, device_param, param
from linker.train import SCOPE_DEFAULTS, SCOPES, BioSynConfig

__all__ = ["BioSynParams", "SCOPE_LABELS"]

_PAPER = BioSynConfig()
SCOPE_LABELS = (("auto", "auto: full on a GPU, student on a CPU"), ("full", "full (the paper: the whole model)"),
                ("student", "student (3 layers: the CPU choice)"), ("head", "head (frozen transformer)"))


@dataclass
class BioSynParams:
    """BioSyn's parameters, the main ones first."""

    train_scope: str = param(
        "auto", "Training scope",
        "All of the transformer (GPU), a 3-layer student (CPU), or a head alone (seconds, but it overfits).",
        choices=(("auto", "auto (full on a GPU, student on a CPU)"), ("full", "full (the paper)"),
                 ("student", "student (the paper on 3 layers: CPU)"), ("head", "head (frozen transformer)")),
        shown=SCOPE_LABELS, refusal=f"train_scope must be auto or one of {', '.join(SCOPES)}", main=True, form=True)
    epochs: int = param(
        0, "Epochs", "Passes over the training pairs.", high=1000, scoped=True, main=True, form=True)
    lr: float = param(
        0.0, "Learning rate", "Of the transformer.", scoped=True, main=True, form=True)
    topk: int = param(_PAPER.topk, "Top-k candidates", "Candidates per mention each epoch (the paper's 20).", low=1,
                      high=200, main=True, form=True)
    dense_ratio: float = param(_PAPER.dense_ratio, "Dense share α", "Share of the top-k from dense retrieval (the "
                               "paper's 0.5).", high=1, main=True, form=True)
    batch_size: int = param(_PAPER.batch_size, "Batch size", "Training mentions per step (the paper's 16).", low=1,
                            high=4096, main=True, form=True)
    max_length: int = param(_PAPER.max_length, "Max length (tokens)", "Longer names and mentions are cut (the "
                            "paper's 25).", low=4, high=512, main=True, form=True)
    skip_pretrain: bool = param(
        False, "Synonym pre-training", "A base encoder has learnt the synonyms already.",
        ask="Skip synonym pre-training",
        shown=((True, "skipped"), (False, "yes, before BioSyn")), main=True, form=True)
    pretrain_epochs: int = param(0, "Synonym pre-training epochs", "0: the scope's default.", scoped=True, main=True)
    pretrain_max_pairs: int = param(0, "Synonym pre-training pairs", "0: the scope's default.", scoped=True,
                                    unset="all", main=True)
    max_queries: int = param(0, "Training queries", "The first N only, for a quick trial; empty: all.", unset="all",
                             main=True, form=True)
    device: str = device_param()
    weight_decay: float = param(_PAPER.weight_decay, "Weight decay")
    grad_clip: float = param(_PAPER.grad_clip, "Gradient clipping")
    seed: int = param(_PAPER.seed, "Seed")
    amp: bool = param(_PAPER.amp, "Mixed precision (GPU)")
    num_threads: int = param(_PAPER.num_threads, "CPU threads", low=1)
    initial_sparse_weight: float = param(_PAPER.initial_sparse_weight, "Initial sparse weight λ", low=None)
    sparse_weight_lr: float = param(_PAPER.sparse_weight_lr, "Learning rate of λ")
    head_lr: float = param(_PAPER.head_lr, "Head learning rate")
    head_hidden: int = param(_PAPER.head_hidden, "Head width", low=1)
    dense_scale: float = param(_PAPER.dense_scale, "Dense score scale")
    reencode_batch_size: int = param(_PAPER.reencode_batch_size, "Re-encoding batch size", low=1)
    quantized_reencode: bool = param(_PAPER.quantized_reencode, "Int8 re-encoding (CPU)")
    dedupe_queries: bool = param(_PAPER.dedupe_queries, "Merge identical training pairs")
    negative_weight: float = param(_PAPER.negative_weight, "Weight of a curator's hard negative")
    prior_weight: float = param(1e-3, "Concept prior weight")
    step_delay_s: float = delay_param()

    @classmethod
    def scope_defaults(cls, scope: str) -> dict[str, Any]:
        """``epochs``, ``lr``, ``pretrain_epochs`` and ``pretrain_max_pairs`` on ``scope``."""
        defaults = asdict(SCOPE_DEFAULTS[scope])
        return {name: defaults[name] for name in ("epochs", "lr", "pretrain_epochs", "pretrain_max_pairs")}
