"""What a person sets for a LATTE run: the re-ranker's sizes (:class:`linker.rerank.model.LatteConfig`), its
training (:class:`linker.rerank.training.RerankTrainingConfig`) and the candidates it orders. The defaults are the
linker's CPU sizes with the paper's K = 2048 latent types. :func:`linker.methods.latte.latte_config` makes the
recipe's config from them."""

from __future__ import annotations

from dataclasses import dataclass

from linker.methods.params import delay_param, device_param, param
from linker.rerank.context import DEFAULT_WINDOW_WORDS
from linker.rerank.model import LatteConfig
from linker.rerank.training import RerankTrainingConfig

__all__ = ["LatteParams"]

_MODEL, _TRAINING = LatteConfig(), RerankTrainingConfig()


@dataclass
class LatteParams:
    """LATTE's parameters, the main ones first. The least values make a model: one latent type, two
    candidates, two folds, one epoch."""

    epochs: int = param(_TRAINING.epochs, "Epochs", "Passes over the cross-fitted training candidates.", low=1,
                        high=1000, main=True, form="latte_epochs")
    lr: float = param(_TRAINING.lr, "Learning rate", "Of the re-ranker (Adam).", above=True, main=True)
    batch_size: int = param(_TRAINING.batch_size, "Batch size", "Mentions per step.", low=1, main=True)
    latent_types: int = param(_MODEL.latent_types, "Latent types K", "The paper's 2048; most stay empty on a small "
                              "dictionary.", low=1, main=True, form=True)
    top_k: int = param(10, "Candidates re-ranked (top-k)", "Retriever candidates the re-ranker orders (the paper's "
                       "10).", low=2, high=200, main=True, form="latte_top_k")
    known_type_weight: float = param(_TRAINING.known_type_weight, "Known-type loss weight", "0: no known-type loss "
                                     "(the paper's LATTE-NKT).", main=True)
    window_words: int = param(DEFAULT_WINDOW_WORDS, "Context window (words each side)", low=1, main=True)
    folds: int = param(5, "Cross-fitting folds", "Candidates of each fold are retrieved by a linker that has not "
                       "learnt its mentions.", low=2, main=True)
    max_mentions: int = param(0, "Training mentions", "Train on the first N mention parts only (0: all); smoke runs.",
                              unset="all", main=True)
    device: str = device_param()
    part_weight: float = param(_TRAINING.part_weight, "Own ranking loss of f and g", "0: they learn only through r.")
    min_type_count: int = param(_TRAINING.min_type_count, "Min concepts per known type")
    hidden: int = param(_MODEL.hidden, "Hidden width", low=1)
    lstm_layers: int = param(_MODEL.lstm_layers, "Recurrent layers", low=1)
    step_delay_s: float = delay_param()
