"""The deep averaging network name encoder of Fivez, Šuster and Daelemans (BioNLP 2021, "Scalable few-shot
learning of robust biomedical name representations", section 3.1):

    u_n  = mean of the name's (frozen, pretrained) word vectors          eq. 1
    f(n) = W2 · dropout(ReLU(W1 · u_n + b1)) + b2                         one wide hidden layer

The output has the input's dimension: the context objective pulls f(n) towards u_n itself and the grounding
objective towards (u_p + u_n) / 2 (:mod:`linker.methods.dan`). As in the authors' released code, u_n is
L2-normalised before the network (every loss is a cosine, so only its direction matters, and names of one
word and of ten then enter at one scale), and dropout follows the ReLU.

The paper's hidden layer has 76,800 units. Measured on this project's 2-core CPU with encode() end to end
(tokenising, word lookup, the network) over MEDIC names, 200-dimensional fastText vectors, batches of 4,096
(256 for 76,800), best of 3 runs, in two sessions while other jobs shared the cores (load 2 to 5):

    hidden     names/s, 1 thread     names/s, 2 threads
    1,024       29,600 - 54,700       16,000 - 23,900
    2,048       16,800 - 20,300        9,600 - 15,700
    4,096        9,000 - 12,900        6,000 -  7,500
    76,800         340 -    680                   305

The word averaging alone runs at 100,000-250,000 names/s; the two matrix products are the cost, linear in
the width. Only 1,024 keeps the project's target of 20,000 names/s on one thread, so it is the CPU default:
the paper's width would take two to four minutes to index MEDIC's 73K names, and training encodes every
training name once per epoch. :meth:`DANConfig.paper` gives the paper's width for a GPU.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from linker.encoders.base import WORD_VECTORS_FOLDER, read_word_vector_encoder, save_word_vector_encoder
from linker.encoders.wordvec import WordVectors, tokenize

__all__ = ["DANConfig", "DANEncoder", "WEIGHTS", "WORD_VECTORS"]

WEIGHTS = "dan.pt"
WORD_VECTORS = WORD_VECTORS_FOLDER
_FORMAT = 1


@dataclass(frozen=True)
class DANConfig:
    """The network's shape: the measured CPU choice by default (see the module docstring); :meth:`paper` is
    section 5.1's 76,800 units with dropout 0.5.

    Dropout goes with the width: the paper's 0.5 still leaves 38,400 of its units on, but half of 1,024 is
    a noisy average. Measured on NCBI Disease (level 0, MEDIC, 10 minutes on one thread each), dense dev
    Acc@1 with dropout 0.5 stayed at the fastText baseline (best 0.528 against 0.519) while 0.1 reached
    0.557, ahead at every epoch; hence 0.1 at the CPU width."""

    hidden: int = 1024
    dropout: float = 0.1

    def __post_init__(self) -> None:
        if int(self.hidden) < 1:
            raise ValueError("DANConfig.hidden must be at least 1")
        if not 0.0 <= float(self.dropout) < 1.0:
            raise ValueError("DANConfig.dropout must be in [0, 1)")

    @classmethod
    def paper(cls) -> DANConfig:
        """Fivez et al. (2021), section 5.1: one hidden layer of 76,800 units, dropout 0.5."""
        return cls(hidden=76_800, dropout=0.5)


class DANEncoder(nn.Module):
    """Names -> unit vectors through mean word vectors and one wide ReLU layer.

    ``forward(u)`` maps mean word vectors [b, d] to encodings [b, d] (unnormalised; training takes cosines);
    :meth:`encode` maps names to L2-normalised float32 [n, d] in inference mode. Word vectors are frozen and
    not module parameters: they are looked up once per distinct word and kept in a growing matrix, so a
    batch is averaged with one ``embedding_bag`` call.
    """

    kind = "dan"

    def __init__(self, word_vectors: WordVectors, config: DANConfig | None = None) -> None:
        super().__init__()
        self.config = config or DANConfig()
        self.word_vectors = word_vectors
        d = word_vectors.dim
        self.hidden = nn.Linear(d, self.config.hidden)
        self.dropout = nn.Dropout(self.config.dropout)
        self.out = nn.Linear(self.config.hidden, d)
        # word -> row of _table; row 0 is padding and never used (empty names are empty bags)
        self._rows: dict[str, int] = {}
        self._table = np.zeros((1024, d), dtype=np.float32)
        self._filled = 0

    @property
    def dim(self) -> int:
        return int(self.word_vectors.dim)

    # --- the network --------------------------------------------------------------------------------

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        """u [b, d] mean word vectors (any scale) -> f(n) [b, d]."""
        u = nn.functional.normalize(u, dim=-1)  # [b, d]; a zero row (no tokens) stays zero
        return self.out(self.dropout(torch.relu(self.hidden(u))))  # [b, d]

    # --- word vectors ---------------------------------------------------------------------------------

    def _row(self, word: str) -> int:
        row = self._rows.get(word)
        if row is None:
            if self._filled == len(self._table):
                self._table = np.concatenate([self._table, np.zeros_like(self._table)])
            row = self._filled
            self._table[row] = self.word_vectors.vector(word)
            self._rows[word] = row
            self._filled += 1
        return row

    def mean_vectors(self, texts: Sequence[str]) -> torch.Tensor:
        """u_n of each name [n, d] float32: the mean of its word vectors (zeros for a name without tokens);
        the same numbers as :meth:`WordVectors.name_vectors`, averaged in one call."""
        ids: list[int] = []
        offsets: list[int] = []
        row = self._row
        for text in texts:
            offsets.append(len(ids))
            ids.extend(row(t) for t in tokenize(text))
        if not texts:
            return torch.zeros((0, self.dim))
        table = torch.from_numpy(self._table[: max(self._filled, 1)])
        return nn.functional.embedding_bag(torch.tensor(ids, dtype=torch.long), table,
                                           torch.tensor(offsets, dtype=torch.long), mode="mean")

    # --- the NameEncoder protocol -----------------------------------------------------------------

    @torch.no_grad()
    def encode(self, texts: Sequence[str], batch_size: int = 4096) -> np.ndarray:
        """L2-normalised float32 [n, d] in eval mode (no dropout); batches of ``batch_size`` names."""
        was_training = self.training
        self.eval()
        device = self.hidden.weight.device
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        step = max(1, int(batch_size))
        try:
            for start in range(0, len(texts), step):
                u = self.mean_vectors(texts[start:start + step]).to(device)
                f = nn.functional.normalize(self(u), dim=-1)
                out[start:start + len(u)] = f.cpu().numpy()
        finally:
            self.train(was_training)
        return out

    def fingerprint(self) -> str:
        digest = hashlib.sha1(f"dan:{self.config.hidden}:{self.config.dropout}".encode())
        for name, tensor in sorted(self.state_dict().items()):
            digest.update(name.encode())
            digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
        digest.update(self.word_vectors.fingerprint().encode())
        return digest.hexdigest()[:16]

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "format": _FORMAT, "dim": self.dim, "config": asdict(self.config),
                "word_vectors": self.word_vectors.describe()}

    # --- persistence ------------------------------------------------------------------------------------

    def save(self, folder: str | Path) -> None:
        """``encoder.json`` (kind ``dan``, the config), ``dan.pt`` (the network's weights) and the word
        vectors under ``wordvectors/``: everything :meth:`load` needs."""
        save_word_vector_encoder(folder, self, WEIGHTS, self.describe() | {"fingerprint": self.fingerprint()})

    @classmethod
    def load(cls, folder: str | Path) -> DANEncoder:
        payload, vectors, state = read_word_vector_encoder(folder, cls.kind, WEIGHTS)
        encoder = cls(vectors, DANConfig(**payload.get("config", {})))
        encoder.load_state_dict(state)
        return encoder.eval()
