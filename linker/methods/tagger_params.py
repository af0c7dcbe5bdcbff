"""The mention tagger's configuration: the recipe's (:class:`TaggerRecipeConfig`) and what a person sets for a
tagger run (:class:`TaggerParams`: its settings and the mention types it learns to find). :func:`tagger_config`
makes the first from the second; :func:`mention_type_filter` reads the types."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

from linker.methods.base import RunContext
from linker.methods.params import ParamError, delay_param, device_param, param

__all__ = ["TaggerRecipeConfig", "TaggerParams", "tagger_config", "mention_type_filter", "MAX_TYPE_CHARS"]

MAX_TYPE_CHARS = 64  # the workbench's Mention.mention_type is this long


@dataclass(frozen=True)
class TaggerRecipeConfig:
    """The CPU default: tuned on NCBI Disease and BC5CDR-disease dev with MiniLM-L6 on 2 shared cores
    (bench/detection.py, bench/RESULTS.md).

    ``stride`` is the number of tokens consecutive windows share (Hugging Face's meaning); ``warmup`` the share
    of the optimiser steps over which the learning rate rises linearly from 0 before decaying linearly to 0.
    """

    epochs: int = 6
    # 3e-4: on BC5CDR-disease dev 0.769 exact F1 against 0.735 at 1e-4 without dictionary features, and 0.827
    # with them (bench/RESULTS.md, "mention tagger: learning rate" and "... with dictionary features").
    lr: float = 3e-4
    batch_size: int = 16
    max_length: int = 256
    stride: int = 64
    warmup: float = 0.1
    weight_decay: float = 0.01
    label_smoothing: float = 0.0
    grad_clip: float = 1.0
    device: str | None = None  # None: CUDA when there is one, else the CPU
    num_threads: int = 2  # torch CPU threads
    seed: int = 13
    max_documents: int | None = None  # train on the first N documents (tests, quick runs)
    # Train on tiles of max_length tokens that share none (the last shorter), not on the overlapping windows the
    # tagger reads with: each token once per epoch, a quarter fewer tokens on abstracts.
    train_on_tiles: bool = True
    # Dictionary features (linker.detect.gazetteer) when the inputs have dictionary names; the training
    # mentions' texts join the names, cross-fitted over this many folds of the training documents.
    dictionary_features: bool = True
    gazetteer_folds: int = 5

    def __post_init__(self) -> None:
        if self.epochs < 1:
            raise ValueError(f"epochs must be at least 1, not {self.epochs}")
        if not self.lr > 0:
            raise ValueError(f"lr must be positive, not {self.lr}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {self.batch_size}")
        if not 8 <= self.max_length <= 512:
            raise ValueError(f"max_length must be between 8 and 512 tokens, not {self.max_length}")
        if not 0 <= self.stride < self.max_length - 2:
            raise ValueError(f"stride must be at least 0 and below max_length - 2, not {self.stride}")
        if not 0 <= self.warmup < 1:
            raise ValueError(f"warmup is a share of the steps, in [0, 1), not {self.warmup}")
        if self.weight_decay < 0:
            raise ValueError(f"weight_decay must not be negative, not {self.weight_decay}")
        if not 0 <= self.label_smoothing < 1:
            raise ValueError(f"label_smoothing must be in [0, 1), not {self.label_smoothing}")
        if self.num_threads < 1:
            raise ValueError(f"num_threads must be at least 1, not {self.num_threads}")
        if self.max_documents is not None and self.max_documents < 1:
            raise ValueError(f"max_documents must be at least 1 (or None: all), not {self.max_documents}")
        if self.gazetteer_folds < 2:
            raise ValueError(f"gazetteer_folds must be at least 2, not {self.gazetteer_folds}")


_RECIPE = TaggerRecipeConfig()
_TYPES = (f"mention_types must be a list of mention types (e.g. [\"Disease\"]; each 1 to {MAX_TYPE_CHARS} "
          "characters); empty: every type")


@dataclass
class TaggerParams:
    """The tagger's parameters, the main ones first."""

    mention_types: list[str] = param(
        [], "Mention types", "Comma-separated (e.g. Disease); empty: every type. Untyped curator mentions count.", unset="all types",
        refusal=_TYPES, main=True, form="tagger_mention_types")
    epochs: int = param(_RECIPE.epochs, "Epochs", "Passes over the training documents; the evaluation collection is "
                        "scored after each.", low=1, high=1000, main=True, form="tagger_epochs")
    lr: float = param(_RECIPE.lr, "Learning rate", "Of the transformer and its token-classification head.",
                      above=True, main=True, form="tagger_lr")
    batch_size: int = param(_RECIPE.batch_size, "Batch size (windows)", "Token windows per step.", low=1, high=4096,
                            main=True, form="tagger_batch_size")
    max_length: int = param(_RECIPE.max_length, "Max length (tokens)", "Each window's length: longer documents are "
                            "read in overlapping windows.", low=8, high=512, main=True, form="tagger_max_length")
    stride: int = param(_RECIPE.stride, "Stride (tokens)", "Tokens consecutive windows share; below the max length "
                        "less 2.", high=509, main=True, form="tagger_stride")
    max_documents: int | None = param(None, "Training documents", "Train on the first N documents only, for a quick "
                                      "trial; empty: all.", unset="all", main=True, form="tagger_max_documents")
    device: str = device_param()
    warmup: float = param(_RECIPE.warmup, "Warm-up", "The share of the steps over which the learning rate rises.",
                          high=1, below=True, percent=True)
    weight_decay: float = param(_RECIPE.weight_decay, "Weight decay")
    label_smoothing: float = param(_RECIPE.label_smoothing, "Label smoothing", high=1, below=True)
    grad_clip: float = param(_RECIPE.grad_clip, "Gradient clipping")
    num_threads: int = param(_RECIPE.num_threads, "CPU threads", low=1)
    seed: int = param(_RECIPE.seed, "Seed")
    train_on_tiles: bool = param(_RECIPE.train_on_tiles, "Train on tiles", "Tiles of max length tokens sharing none, "
                                 "not the overlapping windows it reads with.")
    dictionary_features: bool = param(_RECIPE.dictionary_features, "Dictionary features")
    gazetteer_folds: int = param(_RECIPE.gazetteer_folds, "Gazetteer folds", low=2)
    step_delay_s: float = delay_param()

    def __post_init__(self) -> None:
        types = self.mention_types
        if not all(isinstance(t, str) and 0 < len(t.strip()) <= MAX_TYPE_CHARS for t in types):
            raise ParamError("mention_types", "must be a list of mention types", _TYPES)
        self.mention_types = sorted({t.strip() for t in types})
        if self.stride >= self.max_length - 2:
            most = self.max_length - 3
            raise ParamError("stride", f"must be below max_length less 2: windows of {self.max_length} tokens share at "
                             f"most {most}; lower the stride (a quarter of the max length reads well)")


def tagger_config(params: TaggerParams, context: RunContext) -> TaggerRecipeConfig:
    """The recipe's config for a person's parameters (the mention types are the inputs')."""
    names = {f.name for f in fields(TaggerRecipeConfig)} - {"device"}
    return TaggerRecipeConfig(**{name: getattr(params, name) for name in names if hasattr(params, name)},
                              device=context.device or None)


def mention_type_filter(types: Sequence[str] | None) -> frozenset[str] | None:
    """The mention types a run trains on (None: every type)."""
    chosen = frozenset(t for t in types or () if t)
    return chosen or None
