"""BNE, the Biomedical Name Encoder (Phan, Sun & Tay, ACL 2019, "Robust Representation Learning of
Biomedical Names", section 3.2): a two-level BiLSTM over a name's characters and words.

    h_w  = [u_w ⊕ last(BiLSTM_char(t_1 .. t_m))]      u_w: the word's pre-trained (frozen) word vector
    h_s  = max(BiLSTM_word(h_w1 .. h_wn))             max pooling over the words
    f(s) = W h_s + b                                  dimension of the word vectors

f(s) lives in the word vectors' space because the training objectives (:mod:`linker.methods.bne`) dot it with
q(s), the mean of a name's word vectors, and with g(c), the mean of q over a concept's names.

The weights are ``nn.LSTM``'s (its initialisation and state-dict names), but the recurrence is this
package's own (:class:`linker.encoders.recurrence.LSTMDirection`, checked against ``nn.LSTM`` by a test): an
input projection is computed once per distinct thing, not once per time step, which ``nn.LSTM`` cannot do. A
character's projection into the character BiLSTM's gates is a row of a [characters, 4h] table; a word's
projection W_ih·h_w + b into the word BiLSTM's gates (both directions) is computed once per distinct word. Each
step of a recurrence is then one product with the hidden state, and the rest elementwise. On this project's CPU
that made training steps several times faster than ``nn.LSTM`` over packed sequences (whose backward pass builds
a weight gradient per step).

Two forward paths share that recurrence. :meth:`BNEEncoder.forward` (training: autograd, dropout) pads each
batch and masks padded steps. :meth:`BNEEncoder.encode` (inference) keeps each word's projection in a
bounded cache and runs names grouped by their number of words (no padding), 512 rows at a time. The two
paths agree to float rounding (a test checks it).

Words are the shared tokenizer's (:func:`linker.encoders.wordvec.tokenize`: lower-cased runs of a-z and
0-9), so the character vocabulary is fixed: 36 characters, nothing to save. A word never seen in training
still gets its fastText vector (character n-grams) and its character BiLSTM state; a name without any
letter or digit encodes to the zero vector.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from linker.encoders.base import read_word_vector_encoder, save_word_vector_encoder
from linker.encoders.recurrence import LSTMDirection
from linker.encoders.wordvec import WordVectors, tokenize

__all__ = ["BNEConfig", "BNEEncoder", "FAST_BNE"]

_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789"
_CHAR_ID = {ch: i + 1 for i, ch in enumerate(_CHARS)}  # 0 pads; len(_CHARS) + 1 is any other character
_UNKNOWN_CHAR = len(_CHARS) + 1
_WEIGHTS = "bne.pt"
# Inference batches, chosen for a CPU rather than taken from the caller's batch_size (a transformer's
# memory hint): recurrent steps run over 512 rows, whose gate tensors stay in the core's cache (measured
# 1.6x faster than 20,000 rows), and the words' input projections over 4,096 rows.
_STEP_ROWS = 512
_PROJECT_ROWS = 4096
# Guards every encoder's word cache (encoders of a web server are called from several threads); one lock
# for all, so that an encoder stays deep-copyable and picklable.
_CACHE_LOCK = threading.Lock()
_TRAIN_CHAR_GROUP = 64  # training pads words in groups of similar length, at least this many words each


@dataclass(frozen=True)
class BNEConfig:
    """The paper's settings (section 4, "Biomedical Named Encoder"): character embeddings of 50, hidden
    states of 200 for the character and the word BiLSTM, dropout 0.5.

    ``char_hidden`` and ``word_hidden`` are per direction (``nn.LSTM``'s ``hidden_size``), so a word's
    character state is 2 x 200 and the pooled name state 2 x 200 before the final linear layer. The output
    dimension is not set here: it is the word vectors' (200 for the paper's skip-gram). Words longer than
    ``max_word_chars`` keep their first characters, names longer than ``max_words`` their first words.
    """

    char_dim: int = 50
    char_hidden: int = 200
    word_hidden: int = 200
    dropout: float = 0.5
    max_word_chars: int = 24
    max_words: int = 16

    def __post_init__(self) -> None:
        for name in ("char_dim", "char_hidden", "word_hidden", "max_word_chars", "max_words"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"BNEConfig.{name} must be at least 1")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError("BNEConfig.dropout must be in [0, 1)")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BNEConfig:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


# Smaller recurrent states for a dictionary encoded at a higher rate; the paper's sizes stay the default.
# 20,000 distinct MEDIC names, one thread of the project's shared 2-core CPU (AVX2), trained weights:
#   paper sizes (200/200): 3,400-5,500 names/s on a first call (fastText lookups, character and word
#                          BiLSTMs), 12,000-13,000 with the words' projections cached
#   FAST_BNE (50/100):     8,700-20,000 on a first call, 21,000-29,000 with the words cached
# (ranges: the machine's other load). Two threads on that machine, shared with other jobs, were 10x slower.
FAST_BNE = BNEConfig(char_hidden=50, word_hidden=100)


_CHAR_TABLE = np.full(256, _UNKNOWN_CHAR, dtype=np.int64)  # byte -> character id
_CHAR_TABLE[[ord(ch) for ch in _CHARS]] = np.arange(1, len(_CHARS) + 1)


def _char_ids(word: str, limit: int) -> list[int]:
    return [_CHAR_ID.get(ch, _UNKNOWN_CHAR) for ch in word[:limit]]


def _char_matrix(words: Sequence[str]) -> torch.Tensor:
    """Character ids of words of one length, [n, m] (one bytes lookup instead of a loop per character;
    a character outside ASCII becomes one '?', so lengths hold)."""
    data = np.frombuffer("".join(words).encode("ascii", "replace"), dtype=np.uint8)
    return torch.from_numpy(_CHAR_TABLE[data].reshape(len(words), -1))


class _Weights:
    """Every weight in the form the recurrences use (see :class:`LSTMDirection`)."""

    def __init__(self, encoder: BNEEncoder, detach: bool) -> None:
        self.char = (LSTMDirection(encoder.char_lstm, "", detach),
                     LSTMDirection(encoder.char_lstm, "_reverse", detach))
        self.word = (LSTMDirection(encoder.word_lstm, "", detach),
                     LSTMDirection(encoder.word_lstm, "_reverse", detach))
        table = encoder.char_embedding.weight  # [chars, char_dim]
        table = table.detach() if detach else table
        # A character's input projection is a row of a table: [chars, 4h] per direction.
        self.char_gates = tuple(torch.addmm(d.bias, table, d.w_ih_t) for d in self.char)
        # Both directions' word input projections in one product: [in, 8h].
        self.word_w_ih_t = torch.cat([d.w_ih_t for d in self.word], dim=1)
        self.word_bias = torch.cat([d.bias for d in self.word])
        project_w, project_b = encoder.project.weight, encoder.project.bias
        self.project_w_t = (project_w.detach() if detach else project_w).T.contiguous()  # [2h, d]
        self.project_b = project_b.detach() if detach else project_b


class BNEEncoder(nn.Module):
    """The BNE name encoder. ``forward(names)`` -> [b, d] unnormalised (training); ``encode(texts)`` ->
    L2-normalised float32 [n, d] (inference, :class:`~linker.encoders.base.NameEncoder`).

    ``word_cache_size`` bounds the words whose word-BiLSTM input projections are kept between ``encode``
    calls (8 x word_hidden floats each: 6.4 KB at the paper's sizes); the cache is dropped whenever the
    module is put back into training mode or given new weights (``load_state_dict``). Weights changed in
    place in eval mode (an optimiser step without ``train()``) would leave it stale.
    """

    kind = "bne"

    def __init__(self, word_vectors: WordVectors, config: BNEConfig | None = None,
                 word_cache_size: int = 50_000) -> None:
        super().__init__()
        self.config = config or BNEConfig()
        self.word_vectors = word_vectors
        self.word_cache_size = word_cache_size
        cfg = self.config
        self.char_embedding = nn.Embedding(_UNKNOWN_CHAR + 1, cfg.char_dim, padding_idx=0)
        self.char_lstm = nn.LSTM(cfg.char_dim, cfg.char_hidden, batch_first=True, bidirectional=True)
        self.word_lstm = nn.LSTM(word_vectors.dim + 2 * cfg.char_hidden, cfg.word_hidden, batch_first=True,
                                 bidirectional=True)
        self.dropout = nn.Dropout(cfg.dropout)
        self.project = nn.Linear(2 * cfg.word_hidden, word_vectors.dim)
        self._fast: _Weights | None = None
        self._word_rows: dict[str, int] = {}
        self._word_gates = torch.zeros(0, 8 * cfg.word_hidden)

    @property
    def dim(self) -> int:
        return self.word_vectors.dim

    def tokens(self, name: str) -> list[str]:
        return tokenize(name)[: self.config.max_words]

    # --- training path ---------------------------------------------------------------------------------

    def _char_states_of(self, words: Sequence[str], weights: _Weights) -> torch.Tensor:
        """last(BiLSTM_char(w)) of words, [n, 2 * char_hidden] (training path). The words are sorted by
        length and padded in a few groups of similar length, which halves the padded steps of one group."""
        ids = [_char_ids(w, self.config.max_word_chars) or [_UNKNOWN_CHAR] for w in words]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        size = max(_TRAIN_CHAR_GROUP, -(-len(ids) // 4))
        parts = []
        for start in range(0, len(order), size):
            group = [ids[i] for i in order[start : start + size]]
            lengths = torch.tensor([len(x) for x in group])
            padded = torch.zeros(len(group), int(lengths.max()), dtype=torch.long)
            for row, chars in enumerate(group):
                padded[row, : len(chars)] = torch.tensor(chars)
            forward = weights.char[0].run(weights.char_gates[0][padded], False, False, lengths)
            backward = weights.char[1].run(weights.char_gates[1][padded], True, False, lengths)
            parts.append(torch.cat([forward, backward], dim=-1))
        inverse = torch.empty(len(order), dtype=torch.long)
        inverse[torch.tensor(order)] = torch.arange(len(order))
        return torch.cat(parts)[inverse]

    def forward(self, names: Sequence[str]) -> torch.Tensor:
        """f(s) for each name, [b, d] (zeros for a name without a word). Runs on the CPU: the recurrences
        are the ones :meth:`encode` runs, over padded batches, with autograd and dropout."""
        weights = _Weights(self, detach=False)
        tokens = [self.tokens(n) for n in names]
        out = torch.zeros(len(names), self.dim)
        keep = [i for i, t in enumerate(tokens) if t]
        if not keep:
            return out + self.project.bias.sum() * 0.0  # keeps the graph
        vocab: dict[str, int] = {}
        for i in keep:
            for w in tokens[i]:
                vocab.setdefault(w, len(vocab))
        words = list(vocab)
        vectors = torch.from_numpy(self.word_vectors.word_vectors(words))  # u_w [v, d]
        states = self.dropout(torch.cat([vectors, self._char_states_of(words, weights)], dim=-1))  # h_w [v, in]
        gates = torch.addmm(weights.word_bias, states, weights.word_w_ih_t)  # [v, 8h]
        lengths = torch.tensor([len(tokens[i]) for i in keep])
        index = torch.zeros(len(keep), int(lengths.max()), dtype=torch.long)
        for row, i in enumerate(keep):
            index[row, : len(tokens[i])] = torch.tensor([vocab[w] for w in tokens[i]])
        inputs = gates[index]  # [k, t, 8h]
        four = 4 * self.config.word_hidden
        forward = weights.word[0].run(inputs[..., :four], reverse=False, pool=True, lengths=lengths)
        backward = weights.word[1].run(inputs[..., four:], reverse=True, pool=True, lengths=lengths)
        pooled = self.dropout(torch.cat([forward, backward], dim=-1))  # h_s [k, 2 * word_hidden]
        encoded = torch.addmm(weights.project_b, pooled, weights.project_w_t)  # [k, d]
        return out.index_copy(0, torch.tensor(keep), encoded)

    # --- inference path --------------------------------------------------------------------------------

    def train(self, mode: bool = True) -> BNEEncoder:
        if mode:
            self._clear_cache()
        return super().train(mode)

    def load_state_dict(self, state_dict: Any, strict: bool = True, assign: bool = False) -> Any:
        self._clear_cache()
        return super().load_state_dict(state_dict, strict=strict, assign=assign)

    def _clear_cache(self) -> None:
        self._fast = None
        self._word_rows = {}
        self._word_gates = torch.zeros(0, 8 * self.config.word_hidden)

    def _weights(self) -> _Weights:
        if self._fast is None:
            self._fast = _Weights(self, detach=True)
        return self._fast

    def _char_states(self, words: Sequence[str]) -> torch.Tensor:
        """last(BiLSTM_char(w)) of words, [n, 2 * char_hidden]: words grouped by length, no padding."""
        fast = self._weights()
        limit = self.config.max_word_chars
        clipped = [w[:limit] for w in words]
        out = torch.empty(len(words), 2 * self.config.char_hidden)
        by_length: dict[int, list[int]] = {}
        for i, w in enumerate(clipped):
            by_length.setdefault(len(w), []).append(i)
        for members in by_length.values():
            for start in range(0, len(members), _STEP_ROWS):
                rows = members[start : start + _STEP_ROWS]
                chars = _char_matrix([clipped[i] for i in rows])  # [b, m]
                forward = fast.char[0].run(fast.char_gates[0][chars], reverse=False, pool=False)
                backward = fast.char[1].run(fast.char_gates[1][chars], reverse=True, pool=False)
                out[torch.tensor(rows)] = torch.cat([forward, backward], dim=-1)
        return out

    def _project_words(self, words: Sequence[str]) -> torch.Tensor:
        """W_ih·h_w + b of both word-BiLSTM directions for each word, [n, 8 * word_hidden]."""
        fast = self._weights()
        out = torch.empty(len(words), 8 * self.config.word_hidden)
        for start in range(0, len(words), _PROJECT_ROWS):
            part = words[start : start + _PROJECT_ROWS]
            vectors = torch.from_numpy(self.word_vectors.word_vectors(part))  # [b, d]
            states = torch.cat([vectors, self._char_states(part)], dim=-1)  # [b, in]
            out[start : start + len(part)] = torch.addmm(fast.word_bias, states, fast.word_w_ih_t)
        return out

    def _gates_for(self, words: Sequence[str]) -> tuple[torch.Tensor, dict[str, int]]:
        """The words' input projections (a table [>= n, 8h]) and each word's row in it: cached words looked
        up, the others computed and cached. The table grows by doubling; rows once written never change
        until the cache is dropped (new objects then), so a caller may read its rows after the lock."""
        with _CACHE_LOCK:
            rows, gates = self._word_rows, self._word_gates
            missing = [w for w in words if w not in rows]
            if not missing:
                return gates, rows
            fresh = self._project_words(missing)
            used, needed = len(rows), len(rows) + len(missing)
            if needed > self.word_cache_size:
                # Full: this call's words replace the cache (or, more than it holds, are kept by no one).
                known = [w for w in words if w in rows]
                table = torch.cat([gates[torch.tensor([rows[w] for w in known], dtype=torch.long)], fresh])
                mapping = {w: i for i, w in enumerate(known + missing)}
                if len(mapping) <= self.word_cache_size:
                    self._word_rows, self._word_gates = mapping, table
                return table, mapping
            if needed > gates.shape[0]:
                grown = torch.empty(min(max(needed, 2 * gates.shape[0]), self.word_cache_size), gates.shape[1])
                grown[:used] = gates[:used]
                gates = self._word_gates = grown
            gates[used:needed] = fresh
            rows.update((w, used + i) for i, w in enumerate(missing))
            return gates, rows

    @torch.inference_mode()
    def encode(self, texts: Sequence[str], batch_size: int = 256) -> np.ndarray:
        """L2-normalised f(s) of each text, float32 [n, d]; the zero vector for a text without a word.
        Runs in eval mode. ``batch_size`` is accepted for the protocol and not used: the batches are the
        encoder's own (see ``_STEP_ROWS``). A module in training mode is put back into it afterwards."""
        if self.training:
            self.eval()
            try:
                return self.encode(texts, batch_size)
            finally:
                self.train()
        fast = self._weights()
        tokens = [self.tokens(t) for t in texts]
        distinct = list(dict.fromkeys(w for t in tokens for w in t))
        gates, rows = self._gates_for(distinct)
        four = 4 * self.config.word_hidden
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        lengths = np.fromiter((len(t) for t in tokens), dtype=np.int64, count=len(tokens))
        flat = torch.tensor([rows[w] for t in tokens for w in t], dtype=torch.long)  # every name's words
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]) if len(tokens) else lengths
        for length in np.unique(lengths[lengths > 0]).tolist():
            members = np.flatnonzero(lengths == length)
            for start in range(0, len(members), _STEP_ROWS):
                names = members[start : start + _STEP_ROWS]
                positions = torch.from_numpy(starts[names][:, None] + np.arange(length))  # [b, t]
                inputs = gates[flat[positions]]  # [b, t, 8h]
                forward = fast.word[0].run(inputs[..., :four], reverse=False, pool=True)
                backward = fast.word[1].run(inputs[..., four:], reverse=True, pool=True)
                encoded = torch.addmm(fast.project_b, torch.cat([forward, backward], dim=-1), fast.project_w_t)
                encoded = encoded / encoded.norm(dim=-1, keepdim=True).clamp_min(1e-12)
                out[names] = encoded.numpy()
        return out

    # --- identity and persistence ----------------------------------------------------------------------

    def fingerprint(self) -> str:
        """A digest of the configuration, the weights and the word vectors."""
        digest = hashlib.sha1()
        digest.update(json.dumps(asdict(self.config), sort_keys=True).encode())
        for name, tensor in sorted(self.state_dict().items()):
            digest.update(name.encode())
            digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
        digest.update(self.word_vectors.fingerprint().encode())
        return digest.hexdigest()[:16]

    def save(self, folder: str | Path) -> None:
        """``encoder.json`` (kind, configuration, dimension), ``bne.pt`` (weights) and ``wordvectors/``."""
        save_word_vector_encoder(folder, self, _WEIGHTS, {
            "kind": self.kind, "config": asdict(self.config), "dim": self.dim,
            "word_vectors": self.word_vectors.describe(), "fingerprint": self.fingerprint()})

    @classmethod
    def load(cls, folder: str | Path) -> BNEEncoder:
        meta, vectors, state = read_word_vector_encoder(folder, cls.kind, _WEIGHTS)
        encoder = cls(vectors, BNEConfig.from_dict(meta.get("config", {})))
        encoder.load_state_dict(state)
        return encoder.eval()
