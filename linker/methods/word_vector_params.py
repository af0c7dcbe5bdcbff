"""What a person sets for a fastText run, and for a BNE or DAN run that trains its own word vectors first.

fastText trains word vectors on texts: documents, and the dictionary's names (``include_names``) and definitions
(``include_definitions``: the caller gathers the texts, so it reads that one). BNE and DAN start from word vectors
or, given none, train fastText first with :data:`OWN_VECTOR_PARAMS` (dimension, epochs, definitions); the start form
shows those in the same fields as a fastText run's. :func:`fasttext_config` makes fastText's config."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from linker.encoders.wordvec import FastTextConfig
from linker.methods.params import param

__all__ = ["FastTextParams", "OWN_VECTOR_PARAMS", "MAX_DIM", "GROUP", "own_vector_dim", "own_vector_epochs",
           "own_definitions", "fasttext_config"]

_FASTTEXT = FastTextConfig()
MAX_DIM = 1000
MAX_EPOCHS = 1000
GROUP = "Word vectors"  # the start form's fields of every method that trains or reads word vectors
# A BNE or DAN run's params for its own fastText: dropped when it starts from word vectors.
OWN_VECTOR_PARAMS = ("fasttext_dim", "fasttext_epochs", "include_definitions")

_DEFINITIONS = ("The dictionary's definitions join the texts", "Concept definitions: more text around the names' words.")


@dataclass
class FastTextParams:
    """fastText's parameters (BNE's skip-gram defaults: dimension 200, window 6)."""

    dim: int = param(_FASTTEXT.dim, "Dimension", "Of the word vectors (BNE's paper: 200; DAN's: 300).", low=1,
                     high=MAX_DIM, main=True, form="vector_dim", group=GROUP)
    epochs: int = param(_FASTTEXT.epochs, "Epochs", "Passes of fastText over the texts.", low=1, high=MAX_EPOCHS,
                        main=True, form="vector_epochs", group=GROUP)
    window: int = param(_FASTTEXT.window, "Context window (words)", low=1, high=100, main=True)
    min_count: int = param(_FASTTEXT.min_count, "Min word count", "Rarer words shape the n-grams only.", low=1,
                           high=1000, main=True)
    include_names: bool = param(True, "Dictionary names in the texts", "Most words a name encoder meets are in the "
                                "names.", ask="The dictionary's names join the texts", main=True, form=True, group=GROUP)
    include_definitions: bool = param(True, "Dictionary definitions in the texts", _DEFINITIONS[1], ask=_DEFINITIONS[0],
                                      main=True, form=True, group=GROUP)


def own_vector_dim() -> Any:
    """A BNE or DAN run's dimension of the fastText vectors it trains first (the encoder's input)."""
    return param(_FASTTEXT.dim, "fastText dimension (own vectors)", "Of the word vectors it trains first.", low=1,
                 high=MAX_DIM, main=True, form="vector_dim", group=GROUP)


def own_vector_epochs() -> Any:
    return param(_FASTTEXT.epochs, "fastText epochs (own vectors)", "Passes of fastText over the texts.", low=1,
                 high=MAX_EPOCHS, main=True, form="vector_epochs", group=GROUP)


def own_definitions() -> Any:
    return param(True, "Dictionary definitions in the texts", _DEFINITIONS[1], ask=_DEFINITIONS[0], main=True,
                 form=True, group=GROUP)


def fasttext_config(dim: int, epochs: int, window: int | None = None, min_count: int | None = None) -> FastTextConfig:
    """fastText's config with these values, the rest its defaults."""
    changes: dict[str, Any] = {"dim": dim, "epochs": epochs}
    if window is not None:
        changes["window"] = window
    if min_count is not None:
        changes["min_count"] = min_count
    return replace(_FASTTEXT, **changes)
