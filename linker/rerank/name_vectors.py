"""Every dictionary name's pooled encoding under a trained re-ranker, computed once, after training.

A candidate's latent type, its latent distribution (for g) and its known-type logits are all read from one vector,
its name's pooled encoding (:meth:`linker.rerank.model.LatteModel.pooled_names`), which depends on the name alone.
Stored per name with the re-ranker (float16, 2·hidden values: about 40 MB for CTD MEDIC's 75K names), they let a
re-ranker whose ranking does not read f (one that keeps the retriever's order, or a g-only ablation) type a panel's
candidates without running the transformer over their names, which was the largest cost of a first view after
retrieval. A re-ranker whose ranking reads f still needs the names' token states. Names the store lacks (curator
synonyms added after training) are encoded as before.

Files in the re-ranker's folder: ``name_vectors.npy`` ([N, d] float16) and ``name_vectors.json`` (the N names, in
the same order).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

__all__ = ["NameVectors", "VECTORS_FILE", "NAMES_FILE"]

VECTORS_FILE = "name_vectors.npy"
NAMES_FILE = "name_vectors.json"


class NameVectors:
    """name -> its pooled encoding, for a fixed set of names."""

    def __init__(self, names: Sequence[str], vectors: np.ndarray) -> None:
        if vectors.ndim != 2 or vectors.shape[0] != len(names):
            raise ValueError(f"{len(names)} names for name vectors of shape {vectors.shape}")
        self.names = list(names)
        self.vectors = vectors.astype(np.float16, copy=False)
        self._row = {name: i for i, name in enumerate(self.names)}

    def __len__(self) -> int:
        return len(self.names)

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def rows(self, names: Sequence[str]) -> list[int | None]:
        """Each name's row, None for a name the store lacks."""
        return [self._row.get(n) for n in names]

    def take(self, rows: Sequence[int]) -> torch.Tensor:
        """The vectors of ``rows`` [len(rows), d], float32."""
        return torch.from_numpy(self.vectors[np.asarray(rows, dtype=np.int64)].astype(np.float32))

    def save(self, folder: Path) -> None:
        np.save(folder / VECTORS_FILE, self.vectors, allow_pickle=False)
        (folder / NAMES_FILE).write_text(json.dumps(self.names, ensure_ascii=False) + "\n")

    @classmethod
    def load(cls, folder: Path) -> NameVectors | None:
        """The stored vectors; None where the re-ranker was saved without them (raises on a corrupted pair)."""
        if not (folder / VECTORS_FILE).exists() and not (folder / NAMES_FILE).exists():
            return None
        names = json.loads((folder / NAMES_FILE).read_text())
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ValueError(f"{NAMES_FILE} is not a list of names")
        return cls(names, np.load(folder / VECTORS_FILE, allow_pickle=False))
