"""What a person sets for a hierarchy pre-training (HiPrBERT) run: the scope, the batches and the distances the
loss orders. ``max_batches``, ``batch_size`` and ``lr`` left None are the scope's defaults, resolved once the
device is known (:meth:`linker.methods.hiprbert.HiPrBERTRecipeConfig.resolve`).
:func:`linker.methods.hiprbert.hiprbert_config` makes the recipe's config from them."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from linker.hierarchy.training import DISTANCE_MODES, HierarchyPretrainConfig
from linker.methods.biosyn_params import SCOPE_LABELS
from linker.methods.params import delay_param, device_param, param
from linker.train import STUDENT_LAYERS, choose_device, resolve_scope

__all__ = ["HiPrBERTParams", "MAX_HOLDOUT"]

MAX_HOLDOUT = 0.5  # more than half the concepts held out leaves too little hierarchy to learn from
_DISTANCES = {"hierarchy": "hierarchy: synonym, sibling, parent-child, other (the paper)",
              "synonym": "synonym only (the SapBERT-style baseline)"}



@dataclass(frozen=True)
class _ScopeDefaults:
    batch_size: int
    max_batches: int  # per epoch; 0: all
    layers: tuple[int, ...] | None
    lr: float


# Measured on this project's 2-core CPU: the student trains at 130-180 names/s (2 threads, nothing else
# running; peak RSS 1.5 GB), so 1,000 batches of 128 names (about 60 % of the 1,733 batches of one pass over
# CTD MEDIC, HPO and DOID with the NCBI, BC5CDR and MedMentions mentions) take 12-16 minutes.
# The paper's learning rate (2e-5) is for its 120K steps; the student's 1,000 steps at 2e-5 barely move the
# model, and at 1e-4 every held-out hierarchy AUC but one rose (bench/RESULTS.md, 2026-11-28).
_SCOPES = {
    "full": _ScopeDefaults(batch_size=256, max_batches=0, layers=None, lr=2e-5),
    "student": _ScopeDefaults(batch_size=128, max_batches=1000, layers=STUDENT_LAYERS, lr=1e-4),
}


@dataclass
class HiPrBERTRecipeConfig:
    """The pre-training hyperparameters and the run options around them; ``None`` takes the scope's default.

    ``holdout_share`` of each dictionary's concepts (chosen by a hash of the id, :func:`held_out`) never
    appears in training; with ``holdout_share > 0`` the report scores the hierarchy on them
    (:mod:`linker.hierarchy.evaluation`)."""

    pretrain: HierarchyPretrainConfig = field(default_factory=HierarchyPretrainConfig)
    scope: str = "auto"  # auto | full | student
    epochs: int | None = None
    batch_size: int | None = None
    max_batches: int | None = None
    lr: float | None = None
    layers: tuple[int, ...] | None = None
    distances: str | None = None  # hierarchy | synonym
    holdout_share: float = 0.0
    holdout_seed: int = 13
    device: str | None = None

    def resolve(self) -> HiPrBERTRecipeConfig:
        device = str(choose_device(self.device))
        scope = resolve_scope(self.scope, device)
        if scope not in _SCOPES:
            raise ValueError(f"hierarchy pre-training trains the transformer: scope full or student, not {scope!r}")
        defaults = _SCOPES[scope]
        pretrain = replace(
            self.pretrain,
            epochs=self.epochs if self.epochs is not None else self.pretrain.epochs,
            batch_size=self.batch_size if self.batch_size is not None else defaults.batch_size,
            max_batches=self.max_batches if self.max_batches is not None else defaults.max_batches,
            lr=self.lr if self.lr is not None else defaults.lr,
            distances=self.distances or self.pretrain.distances,
        )
        layers = self.layers if self.layers is not None else defaults.layers
        return replace(self, pretrain=pretrain, scope=scope, device=device, layers=layers)


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
        None, "Batches per epoch", "0: every name once.", high=10_000_000, scoped=True, unset="all",
        placeholder="{student} on a CPU, {full} on a GPU", main=True, form="max_batches")
    batch_size: int | None = param(
        None, "Batch size (names)", "The paper's: {full}.",
        low=2, high=4096, scoped=True, placeholder="{student} on a CPU, {full} on a GPU", main=True,
        form="hiprbert_batch_size")
    lr: float | None = param(
        None, "Learning rate", "Of the transformer.", low=0, above=True, high=1, below=True, scoped=True,
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
        resolved = HiPrBERTRecipeConfig(scope=scope, device="cpu").resolve().pretrain
        return {"max_batches": resolved.max_batches, "batch_size": resolved.batch_size, "lr": resolved.lr}
