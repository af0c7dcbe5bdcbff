"""A trained mention tagger: the project's transformer as a BIO token classifier over words.

Text to spans, in four steps:

1. **Words** (:func:`linker.detect.bio.words`) with their character offsets; the labels are per word.
2. **Subword tokens** of the fast tokenizer, with its offset mapping: a token belongs to the word its first
   character falls in, and a word is labelled by its *first* subtoken (the others are not scored, nor trained).
   The text is tokenized in pieces of words cut at word edges, so a long text is never handed to the tokenizer
   whole (steps 1 and 2, and the windows' places: :mod:`linker.detect.encoding`).
3. **Windows** of ``max_length`` tokens (``[CLS]`` and ``[SEP]`` included) over the text's tokens, consecutive
   windows sharing ``stride`` tokens (the Hugging Face meaning of stride: the overlap). Each word takes its
   label from the window where it sits most centrally, so it is read with as much context on both sides as
   the windows give. Windows are run ``batch_size`` at a time across texts, and a text's buffers (a few bytes
   per word) are dropped as soon as its last window is scored: a 5 MB document goes through in bounded
   memory, a window batch at a time.
4. **Spans** (:func:`linker.detect.bio.from_bio`, source "tagger"), scored by the mean probability of their
   words' labels.

Labels are ``O``/``B``/``I`` without a type: a :class:`~linker.detect.spans.Span` has none, and the tagger is
trained for the mention types it records (``mention_types``; empty: whatever the training spans were).

Decoding is constrained (:func:`linker.detect.bio.viterbi_bio`): the most probable label sequence in which ``I``
never follows ``O`` nor opens the text, instead of each word's most probable label read leniently. A word read as
"I" after an "O" is then either joined to its predecessor's mention or started as one, whichever the probabilities
favour, so exact spans are not cut in two by one uncertain word.

Then the short forms the text defines are tagged wherever they recur when the tagger marked their long form
(:mod:`linker.detect.short_forms`, the rule the dictionary matcher applies too; ``short_forms``).

A tagger may read **dictionary features** (:mod:`linker.detect.gazetteer`): each token's input embedding plus a
learned vector saying whether a dictionary match begins there, continues there, or does not cover it.

The artifact is one folder: the Hugging Face model (``config.json`` with its labels, ``model.safetensors``), its
tokenizer, and ``tagger.json`` (labels, max_length, stride, mention types, metadata); a tagger with dictionary
features adds ``gazetteer.txt.gz`` (the names) and ``gazetteer.safetensors`` (the feature vectors). Training
lives in :mod:`linker.methods.tagger`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from linker.detect.bio import LABELS, from_bio, viterbi_bio
from linker.detect.encoding import Encoded, encode_text, window_starts
from linker.detect.gazetteer import FEATURES, GAZETTEER_FILE, Gazetteer
from linker.detect.short_forms import propagate_short_forms
from linker.detect.spans import TAGGER, Span
from linker.train import choose_device

__all__ = ["Tagger", "TAGGER_FILE"]

TAGGER_FILE = "tagger.json"
FEATURE_WEIGHTS_FILE = "gazetteer.safetensors"
FORMAT_VERSION = 1
POOL_BATCHES = 8  # prediction sorts this many batches' windows by length before running them


@dataclass
class _Pending:
    """A text being tagged: its encoding, and the best-placed label probabilities of each word so far."""

    index: int
    text: str
    enc: Encoded
    probs: np.ndarray  # (words, labels) float32
    distance: np.ndarray  # (words,) how far from its window's centre each word's probabilities were read
    windows_left: int

    @property
    def first(self) -> np.ndarray:
        return np.frombuffer(self.enc.first, dtype=np.int64)


class Tagger:
    """A BIO token classifier over words; see the module docstring."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        max_length: int = 256,
        stride: int = 64,
        mention_types: Sequence[str] = (),
        metadata: dict[str, Any] | None = None,
        device: str | torch.device | None = None,
        gazetteer: Gazetteer | None = None,
        feature_embedding: torch.nn.Embedding | None = None,
        short_forms: bool = True,
    ) -> None:
        if max_length < 8:
            raise ValueError(f"max_length must be at least 8 tokens, not {max_length}")
        if not 0 <= stride < max_length - 2:
            raise ValueError(f"stride (the tokens windows share) must be in [0, max_length - 2), not {stride}")
        self.model = model
        self.tokenizer = tokenizer  # the transformers tokenizer (saved with the model)
        self.max_length = max_length
        self.stride = stride
        self.mention_types = tuple(mention_types)
        self.short_forms = short_forms
        self.metadata: dict[str, Any] = dict(metadata or {})
        self.device = choose_device(str(device) if device is not None else None)
        self.model.to(self.device)
        self.model.eval()
        # Dictionary features: one vector per feature value added to each token's input embedding. A new one
        # starts at zero, so that before training the tagger reads text exactly as its base model does.
        self.gazetteer = gazetteer
        self.feature_embedding: torch.nn.Embedding | None = None
        if gazetteer is not None:
            if feature_embedding is None:
                feature_embedding = torch.nn.Embedding(FEATURES, int(model.config.hidden_size))
                torch.nn.init.zeros_(feature_embedding.weight)
            self.feature_embedding = feature_embedding.to(self.device)
        # The tokenizers-library tokenizer gives offsets per token; a private copy, since padding and truncation
        # are switched off on it.
        from tokenizers import Tokenizer as FastTokenizer

        self._fast = FastTokenizer.from_str(tokenizer.backend_tokenizer.to_str())
        self._fast.no_padding()
        self._fast.no_truncation()
        self._cls = int(tokenizer.cls_token_id)
        self._sep = int(tokenizer.sep_token_id)
        self._pad = int(tokenizer.pad_token_id or 0)
        # Prediction's network: None is torch (as trained); else an exported one (linker.detect.onnx_tagger).
        self.runtime: Callable[[np.ndarray, np.ndarray, np.ndarray | None], np.ndarray] | None = None
        self.runtime_name = "torch"

    # --- construction -------------------------------------------------------------------------------

    @classmethod
    def from_base(
        cls,
        base_model: str | Path | None = None,
        max_length: int = 256,
        stride: int = 64,
        mention_types: Sequence[str] = (),
        device: str | torch.device | None = None,
        gazetteer: Gazetteer | None = None,
    ) -> Tagger:
        """A tagger to train: ``base_model`` (a local Hugging Face folder; None: the project's default) with a
        new, untrained classification layer (and, with a ``gazetteer``, new dictionary feature vectors)."""
        from transformers import AutoModelForTokenClassification, AutoTokenizer

        from linker.encoders.transformer import _offline, default_base_model

        _offline()
        folder = Path(base_model) if base_model else default_base_model()
        tokenizer = AutoTokenizer.from_pretrained(folder, use_fast=True)
        if not getattr(tokenizer, "is_fast", False):
            raise ValueError(f"{folder}: the tagger needs a fast tokenizer (tokenizer.json) for its offsets")
        model = AutoModelForTokenClassification.from_pretrained(
            folder, num_labels=len(LABELS), id2label=dict(enumerate(LABELS)),
            label2id={label: i for i, label in enumerate(LABELS)},
        )
        return cls(model, tokenizer, max_length, stride, mention_types, {"base_model": str(folder)}, device,
                   gazetteer)

    @property
    def label(self) -> str:
        """A short name for the mentions it finds (``metadata["label"]``, else the folder it was loaded from)."""
        return str(self.metadata.get("label") or "tagger")

    @property
    def labels(self) -> tuple[str, ...]:
        return LABELS

    def knows(self, name: str) -> bool:
        """Whether ``name`` is one the tagger read as a dictionary feature (False without features): its matches
        were weighed in training, see :func:`linker.detect.merge.merge`."""
        return self.gazetteer is not None and name in self.gazetteer.matcher

    def parameters(self) -> list[torch.nn.Parameter]:
        """Everything training updates: the model's weights and the dictionary feature vectors."""
        extra = list(self.feature_embedding.parameters()) if self.feature_embedding is not None else []
        return [*self.model.parameters(), *extra]

    def train(self, mode: bool = True) -> None:
        self.model.train(mode)
        if self.feature_embedding is not None:
            self.feature_embedding.train(mode)

    # --- persistence --------------------------------------------------------------------------------

    def save(self, folder: str | Path) -> None:
        """The model, its tokenizer and ``tagger.json`` into ``folder`` (created if missing)."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)
        settings = {
            "format": FORMAT_VERSION, "kind": "tagger", "labels": list(LABELS), "max_length": self.max_length,
            "stride": self.stride, "mention_types": list(self.mention_types), "metadata": self.metadata,
            "gazetteer": None, "short_forms": self.short_forms,
        }
        if self.gazetteer is not None and self.feature_embedding is not None:
            from safetensors.torch import save_file

            self.gazetteer.save(folder)
            save_file({"weight": self.feature_embedding.weight.detach().cpu().contiguous()},
                      str(folder / FEATURE_WEIGHTS_FILE))
            settings["gazetteer"] = {"names": len(self.gazetteer), "file": GAZETTEER_FILE,
                                     "weights": FEATURE_WEIGHTS_FILE}
        (folder / TAGGER_FILE).write_text(json.dumps(settings, indent=2, default=str) + "\n")

    @classmethod
    def load(cls, folder: str | Path, device: str | torch.device | None = None) -> Tagger:
        from transformers import AutoModelForTokenClassification, AutoTokenizer

        from linker.encoders.transformer import _offline

        _offline()
        folder = Path(folder)
        settings_file = folder / TAGGER_FILE
        if not settings_file.exists():
            raise FileNotFoundError(f"{folder}: not a tagger folder (no {TAGGER_FILE})")
        settings = json.loads(settings_file.read_text())
        if tuple(settings.get("labels", ())) != LABELS:
            raise ValueError(f"{settings_file}: labels {settings.get('labels')} are not {list(LABELS)}")
        tokenizer = AutoTokenizer.from_pretrained(folder, use_fast=True)
        model = AutoModelForTokenClassification.from_pretrained(folder)
        metadata = dict(settings.get("metadata") or {})
        metadata.setdefault("label", folder.name)
        gazetteer, feature_embedding = None, None
        if settings.get("gazetteer"):
            gazetteer, feature_embedding = _load_features(folder, int(model.config.hidden_size))
        return cls(model, tokenizer, int(settings["max_length"]), int(settings["stride"]),
                   tuple(settings.get("mention_types") or ()), metadata, device, gazetteer, feature_embedding,
                   bool(settings.get("short_forms", True)))

    # --- reading texts ------------------------------------------------------------------------------

    def encode(self, text: str, matches: Sequence[Span] | None = None) -> Encoded:
        """``text`` as the tagger reads it; with dictionary features, from ``matches`` when given (training's
        cross-fitted matches), else from the tagger's own gazetteer."""
        if self.gazetteer is None:
            return encode_text(self._fast, text)
        return encode_text(self._fast, text, matches=self.gazetteer.find(text) if matches is None else matches)

    def windows(self, enc: Encoded) -> list[int]:
        """Token offsets where the windows over ``enc`` start (each ``max_length - 2`` tokens of text)."""
        return window_starts(len(enc), self.max_length - 2, self.stride)

    def window_ids(self, enc: Encoded, start: int) -> list[int]:
        return [self._cls, *enc.ids[start : start + self.max_length - 2], self._sep]

    def window_features(self, enc: Encoded, start: int) -> list[int] | None:
        """The window's dictionary features, aligned with :meth:`window_ids` (None without features)."""
        if self.feature_embedding is None:
            return None
        return [0, *enc.feats[start : start + self.max_length - 2], 0]

    def collate(self, rows: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Token id rows padded to the longest: (input_ids, attention_mask), both (batch, length)."""
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), self._pad, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = torch.tensor(r, dtype=torch.long)
            mask[i, : len(r)] = 1
        return ids, mask

    @staticmethod
    def collate_features(rows: Sequence[Sequence[int] | None], width: int) -> torch.Tensor | None:
        """Feature rows padded with "outside" to ``width`` (None when the tagger reads none)."""
        if not rows or rows[0] is None:
            return None
        feats = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            if r is not None:
                feats[i, : len(r)] = torch.tensor(r, dtype=torch.long)
        return feats

    def logits(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, features: torch.Tensor | None = None
    ) -> torch.Tensor:
        """(batch, length, labels) label scores; ``features`` (batch, length) when the tagger reads them."""
        ids, mask = input_ids.to(self.device), attention_mask.to(self.device)
        if self.feature_embedding is None:
            return self.model(input_ids=ids, attention_mask=mask).logits
        if features is None:
            raise ValueError("this tagger reads dictionary features: give each window's features")
        embeds = self.model.get_input_embeddings()(ids) + self.feature_embedding(features.to(self.device))
        return self.model(inputs_embeds=embeds, attention_mask=mask).logits

    def predict(self, texts: Sequence[str], batch_size: int = 16) -> list[list[Span]]:
        """The mentions of each text, sorted by start (source "tagger", score: mean label probability).

        Windows are gathered :data:`POOL_BATCHES` batches at a time and run shortest first, so a batch pads its
        windows to about their own length: an abstract's short last window is not padded to a full one."""
        out: list[list[Span]] = [[] for _ in texts]
        for index, spans in self._tag(texts, max(1, batch_size)):
            out[index] = spans
        return out

    def _tag(self, texts: Sequence[str], batch_size: int) -> Iterator[tuple[int, list[Span]]]:
        was_training = self.model.training
        self.train(False)
        content = self.max_length - 2
        pending: dict[int, _Pending] = {}
        batch: list[tuple[_Pending, int]] = []
        try:
            for index, text in enumerate(texts):
                enc = self.encode(text)
                if not len(enc):
                    yield index, []
                    continue
                starts = self.windows(enc)
                item = _Pending(index, text, enc, np.zeros((len(enc.starts), len(LABELS)), np.float32),
                                np.full(len(enc.starts), np.inf, np.float32), len(starts))
                item.probs[:, 0] = 1.0  # a word no token starts in is "O" unless glued (see _decode)
                pending[index] = item
                batch.extend((item, start) for start in starts)
                if len(batch) >= batch_size * POOL_BATCHES:
                    yield from self._run_pool(batch, pending, content, batch_size)
                    batch = []
            if batch:
                yield from self._run_pool(batch, pending, content, batch_size)
        finally:
            if was_training:
                self.train(True)

    def _run_pool(
        self, pool: list[tuple[_Pending, int]], pending: dict[int, _Pending], content: int, batch_size: int
    ) -> Iterator[tuple[int, list[Span]]]:
        pool.sort(key=lambda window: min(content, len(window[0].enc) - window[1]))
        for at in range(0, len(pool), batch_size):
            yield from self._run(pool[at : at + batch_size], pending, content)

    def _run(
        self, batch: list[tuple[_Pending, int]], pending: dict[int, _Pending], content: int
    ) -> Iterator[tuple[int, list[Span]]]:
        rows = [self.window_ids(item.enc, start) for item, start in batch]
        ids, mask = self.collate(rows)
        feats = self.collate_features([self.window_features(item.enc, start) for item, start in batch], ids.shape[1])
        if self.runtime is not None:
            scores = self.runtime(ids.numpy(), mask.numpy(), None if feats is None else feats.numpy())
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            probs = scores / scores.sum(axis=-1, keepdims=True)  # (batch, length, labels)
        else:
            with torch.inference_mode():
                probs = torch.softmax(self.logits(ids, mask, feats).float(), dim=-1).cpu().numpy()
        for row, (item, start) in enumerate(batch):
            first = item.first[start : start + content]
            length = len(first)
            positions = np.nonzero(first >= 0)[0]
            word_ids = first[positions]
            # How far each token is from the middle of its window: the word keeps the reading where it is closest.
            distance = np.abs(positions - (length - 1) / 2).astype(np.float32)
            better = distance < item.distance[word_ids]
            item.distance[word_ids[better]] = distance[better]
            item.probs[word_ids[better]] = probs[row, positions[better] + 1]  # +1: past [CLS]
            item.windows_left -= 1
        for index in [i for i, item in pending.items() if item.windows_left == 0]:
            item = pending.pop(index)
            yield index, self._decode(item)

    def _decode(self, item: _Pending) -> list[Span]:
        labels_idx = viterbi_bio(item.probs)
        scores = item.probs[np.arange(len(labels_idx)), labels_idx]
        unread = np.isinf(item.distance)
        for w in np.nonzero(unread)[0]:
            # A word that no subtoken starts in is part of its predecessor's token ("37°C"): it continues a
            # mention only when glued to a word inside one.
            if w > 0 and labels_idx[w - 1] != 0 and item.enc.ends[w - 1] == item.enc.starts[w]:
                labels_idx[w], scores[w] = 2, scores[w - 1]
        labels = [LABELS[i] for i in labels_idx]
        spans = from_bio(item.text, item.enc.word_offsets(), labels, scores.tolist())
        return propagate_short_forms(item.text, spans, TAGGER) if self.short_forms else spans


def _load_features(folder: Path, hidden: int) -> tuple[Gazetteer, torch.nn.Embedding]:
    """A saved tagger's gazetteer and dictionary feature vectors; a clear error when either is missing or does
    not fit the model."""
    weights = folder / FEATURE_WEIGHTS_FILE
    if not (folder / GAZETTEER_FILE).exists() or not weights.exists():
        raise FileNotFoundError(f"{folder}: the tagger reads dictionary features but {GAZETTEER_FILE} or "
                                f"{FEATURE_WEIGHTS_FILE} is missing")
    from safetensors.torch import load_file

    try:
        weight = load_file(str(weights))["weight"]
    except Exception as exc:  # a truncated or foreign file: safetensors raises its own error types
        raise ValueError(f"{weights}: cannot be read ({exc})") from exc
    if tuple(weight.shape) != (FEATURES, hidden):
        raise ValueError(f"{weights}: feature vectors of shape {tuple(weight.shape)}, the model needs "
                         f"{(FEATURES, hidden)}")
    embedding = torch.nn.Embedding(FEATURES, hidden)
    with torch.no_grad():
        embedding.weight.copy_(weight)
    return Gazetteer.load(folder), embedding
