"""The command line, ``python -m linker`` (files in, files out), one module per stage.

- :mod:`linker.cli.parser`: argparse (only there and in :mod:`linker.cli.configs`, the training flags' configs) and
  ``main``; each sub-command calls a typed ``*_main`` function.
- :mod:`linker.cli.index`: ``build-index``.
- :mod:`linker.cli.training`: ``train``, ``train-word-vectors``, ``pretrain-hierarchy``, ``train-rerank``,
  ``train-tagger``.
- :mod:`linker.cli.inference`: ``evaluate``, ``calibrate``, ``link``, ``detect``.
"""

from linker.cli.index import build_index_main, encoder_folder
from linker.cli.inference import calibrate_main, detect_main, evaluate_main, link_main
from linker.cli.parser import build_parser, main
from linker.cli.training import (
                                 pretrain_hierarchy_main,
                                 train_main,
                                 train_rerank_main,
                                 train_tagger_main,
                                 train_word_vectors_main,
)

__all__ = ["build_index_main", "encoder_folder", "train_main", "train_word_vectors_main", "pretrain_hierarchy_main",
           "train_rerank_main", "train_tagger_main", "evaluate_main", "calibrate_main", "link_main", "detect_main",
           "build_parser", "main"]
