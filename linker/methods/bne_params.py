"""BNE's configuration: the recipe's (:class:`BNERecipeConfig`, the paper's training settings) and what a person
sets for a BNE run (:class:`BNEParams`: its scalar settings, and the fastText it trains first when it is given no
word vectors). :func:`bne_config` makes the first from the second."""

from __future__ import annotations

from dataclasses import dataclass, field

from linker.encoders.bne import BNEConfig
from linker.encoders.wordvec import FastTextConfig
from linker.methods.base import RunContext
from linker.methods.params import delay_param, device_param, param
from linker.methods.word_vector_params import (
    fasttext_config,
    own_definitions,
    own_vector_dim,
    own_vector_epochs,
)

__all__ = ["OBJECTIVES", "BNERecipeConfig", "BNEParams", "bne_config"]

OBJECTIVES = ("syn", "def", "ctx")


@dataclass
class BNERecipeConfig:
    """The paper's training settings (section 4): Adam with lr 1e-3, gradient clipping at 5.0, batches of
    64. ``epochs`` bounds training, ``patience`` stops it early; ``objectives`` is any non-empty subset of
    ``("syn", "def", "ctx")`` for ablations. ``fasttext`` is used only when ``TrainingInputs.word_vectors``
    is not given; its dimension is the encoder's output dimension."""

    bne: BNEConfig = field(default_factory=BNEConfig)
    fasttext: FastTextConfig = field(default_factory=FastTextConfig)
    objectives: tuple[str, ...] = OBJECTIVES
    epochs: int = 30
    batch_size: int = 64
    lr: float = 1e-3
    grad_clip: float = 5.0
    patience: int = 3
    negatives: int = 1  # in-batch negatives per anchor and objective (the paper: one)
    threads: int = 2
    max_minutes: float | None = None
    seed: int = 13
    # Anchors per epoch (0: every name). An epoch of MEDIC's 74K names takes about 10 minutes at the paper's
    # sizes on this project's CPU; a smaller epoch scores the dev pairs (and can stop) more often. The
    # names are still taken in turn: every name once before any twice.
    epoch_names: int = 0
    dev_share: float = 0.1  # of the training pairs, when there are no dev documents
    prior_weight: float = 1e-3
    log_every: int = 20  # steps between on_step calls

    def __post_init__(self) -> None:
        self.objectives = tuple(self.objectives)
        unknown = [o for o in self.objectives if o not in OBJECTIVES]
        if unknown or not self.objectives:
            raise ValueError(f"BNE objectives must be a non-empty subset of {OBJECTIVES}, not {self.objectives}")
        if self.epoch_names < 0:
            raise ValueError("BNERecipeConfig.epoch_names must be 0 (every name) or positive")
        for name in ("epochs", "batch_size", "patience", "negatives", "threads"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"BNERecipeConfig.{name} must be at least 1")
        if self.max_minutes is not None and self.max_minutes <= 0:
            raise ValueError("BNERecipeConfig.max_minutes must be positive (or None: no budget)")


_RECIPE = BNERecipeConfig()
_OBJECTIVE_LABELS = {"syn": ("synonyms: f(s) near f(s') of another name of its concept", "synonyms"),
                     "def": ("concept: f(s) near the mean word vectors of its concept's names", "concept (mean of its names)"),
                     "ctx": ("context: f(s) near its own mean word vector", "context (own word vectors)")}
_MINUTES = "max_minutes must be a number of minutes, not negative (0 or null: no time budget)"


@dataclass
class BNEParams:
    """BNE's parameters, the main ones first; the fastText ones are dropped when the run starts from word vectors."""

    objectives: list[str] = param(
        list(OBJECTIVES), "Objectives", "The paper trains all three; fewer for an ablation.",
        choices=tuple((o, _OBJECTIVE_LABELS[o][0]) for o in OBJECTIVES),
        shown=tuple((o, _OBJECTIVE_LABELS[o][1]) for o in OBJECTIVES),
        refusal=f"BNE objectives must be a non-empty subset of {OBJECTIVES}",
        empty="Tick at least one objective (the paper trains all three).", main=True, form=True)
    epochs: int = param(_RECIPE.epochs, "Max epochs", "Early stopping usually ends it sooner.", low=1, high=1000,
                        main=True, form="bne_epochs")
    patience: int = param(_RECIPE.patience, "Patience (epochs)", "Stop after this many epochs without a better dev "
                          "Acc@1.", low=1, high=1000, main=True, form="bne_patience")
    max_minutes: float | None = param(
        None, "Time budget (minutes)", "Empty or 0: none; else the epoch under way is cut short and scored.",
        high=10_000, unset="none", refusal=_MINUTES, main=True, form="bne_max_minutes")
    batch_size: int = param(_RECIPE.batch_size, "Batch size", low=1, main=True)
    lr: float = param(_RECIPE.lr, "Learning rate", above=True, main=True)
    negatives: int = param(_RECIPE.negatives, "In-batch negatives", "Per anchor and objective (the paper: one).",
                           low=1, main=True)
    fasttext_dim: int = own_vector_dim()
    fasttext_epochs: int = own_vector_epochs()
    include_definitions: bool = own_definitions()
    device: str = device_param()
    grad_clip: float = param(_RECIPE.grad_clip, "Gradient clipping")
    threads: int = param(_RECIPE.threads, "CPU threads", low=1)
    seed: int = param(_RECIPE.seed, "Seed")
    epoch_names: int = param(_RECIPE.epoch_names, "Anchors per epoch", "0: every name.", unset="all")
    dev_share: float = param(_RECIPE.dev_share, "Held-out share (early stopping)", "Of the training pairs, when "
                             "there are no dev documents.", high=1, below=True, percent=True, unset="none")
    prior_weight: float = param(_RECIPE.prior_weight, "Concept prior weight")
    log_every: int = param(_RECIPE.log_every, "Log every (steps)", low=1)
    step_delay_s: float = delay_param()


def bne_config(params: BNEParams, context: RunContext) -> BNERecipeConfig:
    """The recipe's config for a person's parameters (BNE trains on the CPU: the device is not its)."""
    return BNERecipeConfig(
        fasttext=fasttext_config(params.fasttext_dim, params.fasttext_epochs), objectives=tuple(params.objectives),
        epochs=params.epochs, batch_size=params.batch_size, lr=params.lr, grad_clip=params.grad_clip,
        patience=params.patience, negatives=params.negatives, threads=params.threads,
        max_minutes=params.max_minutes or None, seed=params.seed, epoch_names=params.epoch_names,
        dev_share=params.dev_share, prior_weight=params.prior_weight, log_every=params.log_every,
    )
