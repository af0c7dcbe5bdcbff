"""The built-in training methods by name and label, in the order a person is offered them: light data.

:mod:`linker.recipe` registers these methods (their modules import torch and the rest of the training code); a
reader that only needs their names and labels (the web app's model choices, read while Django loads its apps)
takes them from here and imports no method. A unit test checks that the recipe's table starts with exactly
these, so the two cannot drift apart.
"""

from __future__ import annotations

__all__ = ["BUILT_IN"]

BUILT_IN: tuple[tuple[str, str], ...] = (
    ("biosyn", "BioSyn (synonym marginalisation)"),
    ("latte", "LATTE (re-ranker with latent and known types)"),
    ("hiprbert", "Hierarchy pre-training (HiPrBERT)"),
    ("fasttext", "Word vectors (fastText)"),
    ("bne", "BNE (name encoder over word vectors)"),
    ("dan", "DAN (name encoder over word vectors)"),
    ("tagger", "Mention tagger (BIO token classification)"),
)
