"""What a person sets for a hierarchy pre-training (HiPrBERT) run: the scope, the batches and the distances the
loss orders. ``max_batches``, ``batch_size`` and ``lr`` left None are the scope's defaults, resolved once the
device is known (:meth:`linker.methods.hiprbert.HiPrBERTRecipeConfig.resolve`).
:func:`linker.methods.hiprbert.hiprbert_config` makes the recipe's config from them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from linker.hierarchy.training import DISTANCE_MODES, HierarchyPretrainConfig
from linker.methods.biosyn_params import SCOPE_LABELS
from linker.methods.params import delay_param, device_param, param

__all__ = ["HiPrBERTParams", "MAX_HOLDOUT"]

MAX_HOLDOUT = 0.5  # more than half the concepts held out leaves too little hierarchy to learn from
_DISTANCES = {"hierarchy": "hierarchy: synonym, sibling, parent-child, other (the paper)",
              "synonym": "synonym only (the SapBERT-style baseline)"}


@dataclass
class HiPrBERTParams:
    """HiPrBERT's parameters, the main ones first."""

    train_scope: str = param(
        "auto", "Training scope", "The whole transformer (a GPU job) or the 3-layer student that the CPU BioSyn "
        "default trains.", choices=(("auto", "auto (full on a GPU, student on a CPU)"),
                                    ("full", "full (the paper: the whole model)"), ("student", "student (3 layers: CPU)")),
        shown=SCOPE_LABELS, main=True, form="hiprbert_scope")
    epochs: int = param(HierarchyPretrainConfig().epochs, "Epochs", "Passes over the anchor concepts (the batches "
                        "below each).", low=1, high=100, main=True, form="hiprbert_epochs")
    max_batches: int | None = param(
        None, "Batches per epoch", "Empty: the scope's ({student} for the student, 12-16 minutes on two quiet CPU "
        "cores; {full} for full). 0: every name once.", high=10_000_000, scoped=True, unset="all",
        placeholder="{student} on a CPU, {full} on a GPU", main=True, form="max_batches")
    batch_size: int | None = param(
        None, "Batch size (names)", "Empty: the scope's ({student} for the student, {full} for full, the paper's).",
        low=2, high=4096, scoped=True, placeholder="{student} on a CPU, {full} on a GPU", main=True,
        form="hiprbert_batch_size")
    lr: float | None = param(
        None, "Learning rate", "Of the transformer. Empty: the scope's ({full} for full, the paper's; {student} for "
        "the student's fewer steps).", low=0, above=True, high=1, below=True, scoped=True,
        placeholder="{full} on a GPU, {student} on a CPU", main=True, form="hiprbert_lr")
    distances: str = param(
        HierarchyPretrainConfig().distances, "Distances", "Which pairs the loss orders: the hierarchy's four distances, "
        "or synonyms against the rest.",
        choices=tuple((mode, _DISTANCES[mode]) for mode in DISTANCE_MODES), main=True, form=True)
    holdout_share: float = param(0.0, "Held-out concepts", "Concepts left out of training and scored on (ROC AUC, "
                                 "Spearman per distance); 0: none.", high=MAX_HOLDOUT, percent=True, unset="none",
                                 main=True, form=True)
    device: str = device_param(form=True)
    step_delay_s: float = delay_param()

    @classmethod
    def scope_defaults(cls, scope: str) -> dict[str, Any]:
        """``max_batches``, ``batch_size`` and ``lr`` on ``scope`` (``full`` or ``student``)."""
        from linker.methods.hiprbert import HiPrBERTRecipeConfig  # it imports this module

        resolved = HiPrBERTRecipeConfig(scope=scope, device="cpu").resolve().pretrain
        return {"max_batches": resolved.max_batches, "batch_size": resolved.batch_size, "lr": resolved.lr}
