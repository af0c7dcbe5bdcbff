"""DAN's configuration: the recipe's (:class:`DANRecipeConfig`, the paper's hyperparameters) and what a person sets
for a DAN run (:class:`DANParams`: its scalar settings, and the fastText it trains first when it is given no word
vectors). :func:`dan_config` makes the first from the second."""

from __future__ import annotations

from dataclasses import dataclass, field

from linker.encoders.dan import DANConfig
from linker.encoders.wordvec import FastTextConfig
from linker.methods.base import RunContext
from linker.methods.params import delay_param, device_param, param
from linker.methods.word_vector_params import (
    fasttext_config,
    own_definitions,
    own_vector_dim,
    own_vector_epochs,
)

__all__ = ["DANRecipeConfig", "DANParams", "dan_config"]


@dataclass
class DANRecipeConfig:
    """The paper's hyperparameters (section 5.1) and the run options around them.

    ``level`` 0 trains on synonym sets; ``level`` >= 1 on the classes of ``hierarchy`` (the name of one of
    ``inputs.hierarchies``; None: the first hierarchical one) at that depth below ``top`` (None: the
    hierarchy's own top, see :mod:`linker.hierarchy.levels`). ``validation_names``: at least this many
    held-out names for the level >= 1 stopping criterion (one per class first, the paper's protocol), and at
    most this many for level 0 without dev mentions."""

    dan: DANConfig = field(default_factory=DANConfig)
    fasttext: FastTextConfig = field(default_factory=FastTextConfig)
    level: int = 0
    hierarchy: str | None = None
    top: str | None = None
    margin: float = 0.1
    alpha: float = 1.0
    beta: float = 1.0
    gamma: float = 1.0
    batch_size: int = 64
    lr: float = 1e-3
    max_epochs: int = 50
    patience: int = 10
    max_minutes: float = 30.0  # 0: no time budget
    pool_size: int = 8192  # training names per negative-sampling pool; 0: all (the paper)
    candidates: int = 32  # nearest allowed names weighed per anchor
    validation_names: int = 500
    threads: int = 2
    seed: int = 13
    device: str | None = None  # None: cuda if there is one, else cpu
    prior_weight: float = 1e-3

    def __post_init__(self) -> None:
        if self.level < 0:
            raise ValueError("DANRecipeConfig.level must be 0 (synonym sets) or a hierarchy level >= 1")
        for name in ("batch_size", "max_epochs", "candidates", "threads"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"DANRecipeConfig.{name} must be at least 1")


_RECIPE = DANRecipeConfig()


@dataclass
class DANParams:
    """DAN's parameters, the main ones first; the fastText ones are dropped when the run starts from word vectors.
    Which hierarchy a level >= 1 reads is the caller's to say (:class:`RunContext`)."""

    level: int = param(_RECIPE.level, "Level", "0: synonym sets (linking); L ≥ 1: the ancestors at level L as "
                       "classes.", high=20,
                       shown=((0, "0 (synonym sets: linking)"),), main=True, form=True)
    max_epochs: int = param(_RECIPE.max_epochs, "Max epochs", "Early stopping usually ends it sooner.", low=1,
                            high=1000, main=True, form="dan_epochs")
    patience: int = param(_RECIPE.patience, "Patience (epochs)", "Stop after this many epochs without a better dev "
                          "score (the paper: 10).", low=1, high=1000, main=True, form="dan_patience")
    max_minutes: float = param(_RECIPE.max_minutes, "Time budget (minutes)", "0: none.", high=10_000, unset="none",
                               main=True, form="dan_max_minutes")
    batch_size: int = param(_RECIPE.batch_size, "Batch size", low=1, main=True)
    lr: float = param(_RECIPE.lr, "Learning rate", above=True, main=True)
    margin: float = param(_RECIPE.margin, "Triplet margin", main=True)
    fasttext_dim: int = own_vector_dim()
    fasttext_epochs: int = own_vector_epochs()
    include_definitions: bool = own_definitions()
    device: str = device_param()
    top: str | None = param(None, "Hierarchy top", "A concept id; empty: the hierarchy's own top.",
                            noun="concept id", unset="the hierarchy's own top")
    alpha: float = param(_RECIPE.alpha, "Weight α (synonyms)")
    beta: float = param(_RECIPE.beta, "Weight β (grounding)")
    gamma: float = param(_RECIPE.gamma, "Weight γ (context)")
    pool_size: int = param(_RECIPE.pool_size, "Negative pool size", "Training names per negative-sampling pool; 0: "
                           "all (the paper).", unset="all")
    candidates: int = param(_RECIPE.candidates, "Negative candidates", "Nearest allowed names weighed per anchor.",
                            low=1)
    validation_names: int = param(_RECIPE.validation_names, "Validation names")
    threads: int = param(_RECIPE.threads, "CPU threads", low=1)
    seed: int = param(_RECIPE.seed, "Seed")
    prior_weight: float = param(_RECIPE.prior_weight, "Concept prior weight")
    step_delay_s: float = delay_param()


def dan_config(params: DANParams, context: RunContext) -> DANRecipeConfig:
    """The recipe's config for a person's parameters; ``context.hierarchy`` names the hierarchy a level >= 1 reads."""
    return DANRecipeConfig(
        fasttext=fasttext_config(params.fasttext_dim, params.fasttext_epochs), level=params.level,
        hierarchy=context.hierarchy, top=params.top, margin=params.margin, alpha=params.alpha, beta=params.beta,
        gamma=params.gamma, batch_size=params.batch_size, lr=params.lr, max_epochs=params.max_epochs,
        patience=params.patience, max_minutes=params.max_minutes, pool_size=params.pool_size,
        candidates=params.candidates, validation_names=params.validation_names, threads=params.threads,
        seed=params.seed, device=context.device or None, prior_weight=params.prior_weight,
    )
