"""A trained LATTE re-ranker: score a mention's candidates, describe its latent types, save and load.

Folder ``rerank/`` inside a linker artifact::

    config.json         format, model config, settings, known-type labels, what linker it belongs to
    model.pt            the LatteModel's weights
    latent_types.json   per latent type: how many dictionary names it holds and its most typical names
    concept_types.json  concept id -> its known types (as trained; the candidates' types in the panel)
    name_vectors.npy    each dictionary name's pooled encoding, and name_vectors.json its names
                        (:mod:`linker.rerank.name_vectors`; optional: older re-rankers lack them and encode names)
"""

from __future__ import annotations

import hashlib
import json
import pickle
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from linker.encoders.base import NameEncoder
from linker.encoders.transformer import TransformerEncoder
from linker.rerank.context import DEFAULT_WINDOW_WORDS, MentionContext
from linker.rerank.features import retriever_features
from linker.rerank.model import LatteConfig, LatteModel, LatteOutput
from linker.rerank.name_vectors import NameVectors
from linker.rerank.results import LatentTypeSummary
from linker.rerank.states import TokenStates, pad
from linker.retrieval import Candidate

if TYPE_CHECKING:
    from linker.dictionary import NameTable

__all__ = ["Reranker", "RerankerError", "RerankerSettings", "ScoredCandidates", "dictionary_signature", "RERANK_FORMAT"]

RERANK_FORMAT = 1


class RerankerError(ValueError):
    """A re-ranker folder that cannot be used with this linker (missing, corrupted, or made for another)."""


@dataclass(frozen=True)
class RerankerSettings:
    top_k: int = 10  # candidates re-ranked per part (the paper's 10); the rest keep the retriever's order below
    window_words: int = DEFAULT_WINDOW_WORDS
    mention_max_length: int = 64
    name_max_length: int = 24
    known_type_threshold: float = 0.5  # a known type is predicted for the mention at this probability


@dataclass
class ScoredCandidates:
    """One part's candidates scored by the re-ranker, in the retriever's order (index i = retriever rank i+1)."""

    score: np.ndarray  # r [C]
    match: np.ndarray  # f [C]
    type_similarity: np.ndarray  # g [C]
    latent_type: np.ndarray  # argmax of each candidate's latent distribution [C]
    latent_probability: np.ndarray  # [C]
    mention_latent_type: int
    mention_latent_probability: float
    mention_known_types: list[tuple[str, float]] = field(default_factory=list)


def dictionary_signature(table: NameTable) -> str:
    """A digest of the dictionary's concept ids: a re-ranker belongs to one dictionary version."""
    digest = hashlib.sha1()
    for cid in sorted(table.concepts):
        digest.update(cid.encode())
        digest.update(b"\0")
    return digest.hexdigest()


class Reranker:
    def __init__(
        self,
        model: LatteModel,
        encoder: TransformerEncoder,
        settings: RerankerSettings,
        known_type_labels: Sequence[str],
        concept_types: Mapping[str, tuple[str, ...]],
        latent_types: Sequence[LatentTypeSummary] = (),
        metadata: Mapping[str, Any] | None = None,
        name_vectors: NameVectors | None = None,
    ) -> None:
        self.model = model.eval()
        self.encoder = encoder
        self.settings = settings
        self.known_type_labels = list(known_type_labels)
        self.concept_types = {k: tuple(v) for k, v in concept_types.items()}
        self.latent_types = list(latent_types)
        self.metadata: dict[str, Any] = dict(metadata or {})
        self.states = TokenStates(encoder, settings.mention_max_length, settings.name_max_length)
        self.name_vectors = name_vectors

    # --- scoring ---------------------------------------------------------------------------------------

    def score(
        self,
        contexts: Sequence[MentionContext],
        candidates: Sequence[Sequence[Candidate]],
        table: NameTable,
        prior: Mapping[str, float],
        dense_scale: float,
    ) -> list[ScoredCandidates]:
        """Score each context's candidates (one list per context, already cut to ``settings.top_k``)."""
        out: list[ScoredCandidates] = []
        batch = 32
        for start in range(0, len(contexts), batch):
            ctx = list(contexts[start : start + batch])
            cands = [list(c) for c in candidates[start : start + batch]]
            out.extend(self._score_batch(ctx, cands, table, prior, dense_scale))
        return out

    def _score_batch(self, contexts: list[MentionContext], candidates: list[list[Candidate]], table: NameTable,
                     prior: Mapping[str, float], dense_scale: float) -> list[ScoredCandidates]:
        width = max((len(c) for c in candidates), default=0)
        if width == 0:
            empty = np.zeros(0, dtype=np.float32)
            return [ScoredCandidates(empty, empty, empty, empty.astype(np.int64), empty, -1, 0.0) for _ in contexts]
        mentions = pad(self.states.mentions(contexts))
        names = [(c[i].name if i < len(c) else "") or "-" for c in candidates for i in range(width)]
        feats = np.zeros((len(contexts), width, 8), dtype=np.float32)
        for i, (ctx, cands) in enumerate(zip(contexts, candidates, strict=True)):
            feats[i, : len(cands)] = retriever_features(ctx.query, cands, table, prior, dense_scale)
        out = self._run_model(mentions, names, torch.from_numpy(feats))
        known = torch.sigmoid(out.mention_known_logits) if out.mention_known_logits is not None else None
        results = []
        for i, cands in enumerate(candidates):
            n = len(cands)
            lc = out.candidate_latent[i, :n]
            lp = out.mention_latent[i]
            predicted: list[tuple[str, float]] = []
            if known is not None:
                probs = known[i].tolist()
                order = sorted(range(len(probs)), key=lambda j: -probs[j])
                predicted = [(self.known_type_labels[j], float(probs[j])) for j in order
                             if probs[j] >= self.settings.known_type_threshold] or (
                    [(self.known_type_labels[order[0]], float(probs[order[0]]))] if order else [])
            results.append(ScoredCandidates(
                score=out.score[i, :n].numpy().copy(),
                match=out.match[i, :n].numpy().copy(),
                type_similarity=out.type_similarity[i, :n].numpy().copy(),
                latent_type=lc.argmax(-1).numpy().copy(),
                latent_probability=lc.max(-1).values.numpy().copy(),
                mention_latent_type=int(lp.argmax()),
                mention_latent_probability=float(lp.max()),
                mention_known_types=predicted,
            ))
        return results

    def _run_model(self, mentions: tuple[torch.Tensor, torch.Tensor, torch.Tensor], names: list[str],
                   features: torch.Tensor) -> LatteOutput:
        """The network over B mentions and their B·C candidate names. A model whose ranking does not read f (one
        that keeps the retriever's order weights it 0) needs, with stored name vectors, neither the transformer
        over its candidates nor the cross-attention: only their names' pooled encodings."""
        b, c = features.shape[0], features.shape[1]
        with torch.inference_mode():
            if self.name_vectors is not None and not self.model.reads_match():
                return self.model.types_only(mentions, self.pooled_names(names).view(b, c, -1), features)
            return self.model(mentions, pad(self.states.names(names)), features)

    def pooled_names(self, names: Sequence[str]) -> torch.Tensor:
        """Each name's pooled encoding [N, d] (:meth:`LatteModel.pooled_names`): stored where the re-ranker has
        it, else from the name's token states."""
        rows = self.name_vectors.rows(names) if self.name_vectors is not None else [None] * len(names)
        out = torch.zeros(len(names), 2 * self.model.config.hidden)
        known = [i for i, r in enumerate(rows) if r is not None]
        if known and self.name_vectors is not None:
            out[known] = self.name_vectors.take([r for r in rows if r is not None])
        missing = [i for i, r in enumerate(rows) if r is None]
        if missing:
            with torch.inference_mode():
                out[missing] = self.model.pooled_names(*pad(self.states.names([names[i] for i in missing])))
        return out

    def store_name_vectors(self, names: Sequence[str], batch_size: int = 256) -> None:
        """Compute and keep the pooled encoding of each distinct name (:mod:`linker.rerank.name_vectors`), in
        batches of alike lengths, past the token-state cache (a dictionary's names would flush it)."""
        distinct = sorted(set(names), key=lambda n: (len(n), n))
        vectors = np.zeros((len(distinct), 2 * self.model.config.hidden), dtype=np.float16)
        model = self.model.eval()
        with torch.inference_mode():
            for start in range(0, len(distinct), batch_size):
                chunk = distinct[start : start + batch_size]
                items = self.states.encode_names(chunk)
                pooled = model.pooled_names(*pad([items[n] for n in chunk]))
                vectors[start : start + len(chunk)] = pooled.numpy().astype(np.float16)
        self.name_vectors = NameVectors(distinct, vectors)

    @property
    def keeps_retriever_order(self) -> bool:
        """The trained network serves types only: its ranking is the retriever's (:meth:`LatteModel.keeps_retriever_order`)."""
        return self.model.keeps_retriever_order()

    @property
    def latent_types(self) -> list[LatentTypeSummary]:
        """Every latent type with its typical names, the most populated first."""
        return self._latent_types

    @latent_types.setter
    def latent_types(self, summaries: Sequence[LatentTypeSummary]) -> None:
        self._latent_types = list(summaries)
        self._latent_by_index = {s.index: s for s in self._latent_types}

    def latent_type(self, index: int) -> LatentTypeSummary | None:
        return self._latent_by_index.get(index)

    def type_conflict(self, predicted: Sequence[tuple[str, float]], concept_id: str) -> bool:
        """The concept has known types, the mention a confident prediction, and the two do not meet."""
        confident = {label for label, p in predicted if p >= self.settings.known_type_threshold}
        own = set(self.concept_types.get(concept_id, ()))
        return bool(confident and own and not (confident & own))

    # --- persistence ---------------------------------------------------------------------------------------

    def save(self, folder: str | Path, table: NameTable) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        torch.save(self.model.state_dict(), folder / "model.pt")
        payload = {
            "format": RERANK_FORMAT,
            "method": "latte",
            "model": self.model.config.to_dict(),
            "settings": asdict(self.settings),
            "known_type_labels": self.known_type_labels,
            "encoder_fingerprint": self.encoder.fingerprint(),
            "dictionary_signature": dictionary_signature(table),
            "concepts": len(table.concepts),
            "metadata": self.metadata,
        }
        (folder / "config.json").write_text(json.dumps(payload, indent=2, default=str) + "\n")
        (folder / "latent_types.json").write_text(json.dumps([asdict(s) for s in self.latent_types]) + "\n")
        (folder / "concept_types.json").write_text(json.dumps(self.concept_types, sort_keys=True) + "\n")
        if self.name_vectors is not None:
            self.name_vectors.save(folder)

    @classmethod
    def load(cls, folder: str | Path, encoder: NameEncoder | None, table: NameTable) -> Reranker:
        """Load and check that it was trained for this linker's encoder and dictionary; raises
        :class:`RerankerError` naming what is wrong."""
        folder = Path(folder)
        if not isinstance(encoder, TransformerEncoder):
            what = "is sparse-only" if encoder is None else f"encodes names with {getattr(encoder, 'kind', '?')}"
            raise RerankerError(f"{folder}: a re-ranker reads a transformer's token states, and this linker {what}")
        try:
            payload = json.loads((folder / "config.json").read_text())
            if payload.get("format") != RERANK_FORMAT:
                raise RerankerError(f"{folder}: unsupported re-ranker format {payload.get('format')!r}")
            config = LatteConfig(**payload["model"])
            settings = RerankerSettings(**payload.get("settings", {}))
            labels = [str(x) for x in payload.get("known_type_labels", [])]
            latent = [LatentTypeSummary(int(s["index"]), int(s["count"]), tuple(s["typical_names"]))
                      for s in json.loads((folder / "latent_types.json").read_text())]
            concept_types = {str(k): tuple(v) for k, v in json.loads((folder / "concept_types.json").read_text()).items()}
            model = LatteModel(config)
            model.load_state_dict(torch.load(folder / "model.pt", map_location="cpu", weights_only=True))
            name_vectors = NameVectors.load(folder)
            if name_vectors is not None and name_vectors.dim != 2 * config.hidden:
                raise ValueError(f"name vectors of width {name_vectors.dim} for a model of width {2 * config.hidden}")
        except RerankerError:
            raise
        except FileNotFoundError as exc:
            raise RerankerError(f"{folder}: incomplete re-ranker, {Path(exc.filename or '').name or exc} is missing") from exc
        except (ValueError, KeyError, TypeError, RuntimeError, EOFError, OSError, pickle.UnpicklingError) as exc:
            reason = str(exc).splitlines()[0][:200] if str(exc) else ""
            raise RerankerError(f"{folder}: corrupted re-ranker ({type(exc).__name__}: {reason})") from exc
        if len(labels) != config.known_types:
            raise RerankerError(f"{folder}: {len(labels)} known-type labels for a classifier of {config.known_types}")
        if payload.get("dictionary_signature") != dictionary_signature(table):
            raise RerankerError(
                f"{folder}: trained for another dictionary ({payload.get('concepts')} concepts) than this linker's "
                f"({len(table.concepts)} concepts)")
        if payload.get("encoder_fingerprint") != encoder.fingerprint():
            raise RerankerError(f"{folder}: trained over another transformer than this linker's encoder")
        return cls(model, encoder, settings, labels, concept_types, latent, payload.get("metadata"), name_vectors)
