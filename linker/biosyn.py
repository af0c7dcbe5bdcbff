"""BioSyn (Sung et al., ACL 2020): encoder + learned sparse weight λ, trained by synonym marginalisation
over iteratively re-retrieved candidates.

Each epoch (:meth:`BioSynTask.prepare_epoch`) re-encodes the whole training dictionary with the current
encoder and retrieves k = 20 candidate names per training query: k - ⌊αk⌋ from the static tf-idf scores and
the rest from the dense scores, skipping names the sparse list already has (the paper's "add more dense
candidates" on overlap). Each step encodes the batch's queries and candidate names with gradients and
minimises -log Σ_{candidates of the gold concept} softmax(S) with S = dense_scale·cos + λ·tfidf.

The training dictionary is the base dictionary *without* the training mentions, as in BioSyn's released
data (``train_dictionary.txt``); the mentions are merged into the dictionary of the artifact built after
training (``dev_dictionary.txt`` there). Merging them before training would put every query's own string
among its candidates and leave almost nothing to learn.
"""

from __future__ import annotations

import copy
import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from linker.dictionary import NameTable
from linker.encoders.transformer import TransformerEncoder, cached_features
from linker.index import DenseIndex
from linker.losses import SynonymMarginalLoss
from linker.retrieval import encode_names
from linker.sparse import SparseEncoder
from linker.train import SCOPES, BioSynConfig, ProgressCallback, Trainer

__all__ = ["BioSynModel", "BioSynTask", "TrainingQuery", "train_biosyn", "make_training_queries"]


@dataclass(frozen=True)
class TrainingQuery:
    text: str  # normalised mention (one composite part)
    concept_ids: frozenset[str]  # primary ids of the table; any of them is a positive
    # Primary ids a curator rejected for this text (hard negatives); never one of concept_ids.
    negatives: frozenset[str] = frozenset()


def make_training_queries(
    pairs: Sequence[tuple[str, str]], table: NameTable, dedupe: bool = True,
    negatives: Iterable[tuple[str, str]] = (),
) -> list[TrainingQuery]:
    """(normalised query, concept id) pairs -> training queries with ids resolved to the table's primaries.

    Pairs whose id does not resolve are dropped (they can have no positive candidate). ``negatives`` are
    (normalised text, rejected concept id) pairs: each query of that text carries them, except a concept that
    is also a positive of the query (two curators disagreeing: the link wins). A negative whose text is no
    training query teaches nothing here (there is no positive to rank above it).
    """
    rejected = rejected_by_text(negatives, table)
    out: list[TrainingQuery] = []
    seen: set[tuple[str, frozenset[str]]] = set()
    for text, raw_id in pairs:
        ids = frozenset(p for p in (table.resolve_id(i) for i in raw_id.split("+")) if p)
        if not ids or not text:
            continue
        key = (text, ids)
        if dedupe and key in seen:
            continue
        seen.add(key)
        out.append(TrainingQuery(text, ids, rejected.get(text, frozenset()) - ids))
    return out


def rejected_by_text(negatives: Iterable[tuple[str, str]], table: NameTable) -> Mapping[str, frozenset[str]]:
    """(normalised text, concept id) hard negatives -> text -> the primary ids rejected for it."""
    out: dict[str, set[str]] = {}
    for text, raw_id in negatives:
        for part in raw_id.split("+"):
            primary = table.resolve_id(part)
            if primary and text:
                out.setdefault(text, set()).add(primary)
    return {text: frozenset(ids) for text, ids in out.items()}


class BioSynModel(nn.Module):
    """The shared name encoder plus λ; ``score`` is S(m, n) = dense_scale·<e_m, e_n> + λ·sparse(m, n)."""

    def __init__(self, encoder: TransformerEncoder, initial_sparse_weight: float = 0.0, dense_scale: float = 20.0):
        super().__init__()
        self.encoder = encoder
        self.sparse_weight = nn.Parameter(torch.tensor(float(initial_sparse_weight)))
        self.dense_scale = dense_scale

    def score(self, queries: torch.Tensor, candidates: torch.Tensor, sparse: torch.Tensor) -> torch.Tensor:
        # queries [b, h], candidates [b, k, h], sparse [b, k] -> [b, k]
        dense = torch.einsum("bh,bkh->bk", queries, candidates) * self.dense_scale
        return dense + self.sparse_weight * sparse


@dataclass
class _EpochData:
    candidates: np.ndarray  # [q, k] name rows
    name_vectors: np.ndarray | None  # reserved: [N, h] dictionary vectors of the epoch
    sparse: np.ndarray  # [q, k] tf-idf scores
    targets: np.ndarray  # [q, k] bool
    negatives: np.ndarray  # [q, k] bool: a curator rejected the candidate's concept for the query


class BioSynTask:
    """The BioSyn method as a :class:`linker.train.TrainingTask`."""

    def __init__(
        self,
        model: BioSynModel,
        table: NameTable,
        sparse: SparseEncoder,
        queries: Sequence[TrainingQuery],
        config: BioSynConfig,
    ) -> None:
        if sparse.n_names != len(table):
            raise ValueError(f"sparse encoder indexes {sparse.n_names} names, the table has {len(table)}")
        self.module: nn.Module = model
        self.model = model
        self.table = table
        self.sparse = sparse
        self.queries = list(queries)
        self.config = config
        self.loss_fn = SynonymMarginalLoss(config.negative_weight)
        self._texts = [q.text for q in self.queries]
        self._concepts = np.asarray(table.concept_ids, dtype=object)
        self._sparse_top: np.ndarray | None = None
        self._data: _EpochData | None = None
        self._metrics: dict[str, float] = {}
        if config.train_scope not in SCOPES:
            raise ValueError(f"train_scope must be one of {', '.join(SCOPES)}, not {config.train_scope!r}")
        self.head_only = config.train_scope == "head"
        self._name_features: np.ndarray | None = None
        self._query_features: np.ndarray | None = None
        if self.head_only:
            encoder = model.encoder
            if encoder.head is None:
                encoder.add_head(config.head_hidden)
            encoder.model.requires_grad_(False)
            # The frozen transformer runs once over every name and query; epochs only run the head.
            self._name_features = cached_features(encoder, table.names, config.feature_cache,
                                                  config.reencode_batch_size)
            self._query_features = cached_features(encoder, self._texts, config.feature_cache,
                                                   config.reencode_batch_size)

    def parameter_groups(self) -> list[dict[str, Any]]:
        encoder = self.model.encoder
        if self.head_only:
            assert encoder.head is not None
            main = {"params": list(encoder.head.parameters()), "lr": self.config.head_lr}
        else:
            main = {"params": list(encoder.parameters())}
        return [main, {"params": [self.model.sparse_weight], "lr": self.config.sparse_weight_lr, "weight_decay": 0.0}]

    # --- iterative candidate retrieval -------------------------------------------------------------

    def _dictionary_vectors(self, device: torch.device) -> np.ndarray:
        cfg = self.config
        encoder = self.model.encoder
        if self._name_features is not None:
            return encoder.project_numpy(self._name_features)
        if cfg.quantized_reencode and device.type == "cpu":
            # An int8 copy only picks candidates; the scores that train the model come from the float model.
            snapshot = copy.deepcopy(encoder).cpu()
            snapshot.quantize()
            encoder = snapshot
        return encode_names(encoder, self.table.names, batch_size=cfg.reencode_batch_size)

    def retrieve_candidates(self, device: torch.device) -> tuple[np.ndarray, np.ndarray]:
        """([q, k] name rows: k - ⌊αk⌋ sparse candidates, then dense ones not already there; [N, h] vectors)."""
        cfg = self.config
        k = cfg.topk
        n_dense = int(math.floor(cfg.dense_ratio * k))
        n_sparse = k - n_dense
        if self._sparse_top is None:
            _, self._sparse_top = self.sparse.top_k(self._texts, n_sparse)
        names = self._dictionary_vectors(device)
        index = DenseIndex.build(names)
        if self._query_features is not None:
            qvec = self.model.encoder.project_numpy(self._query_features)
        else:
            qvec = self.model.encoder.encode(self._texts, batch_size=cfg.reencode_batch_size)
        _, dense_top = index.search(qvec, k)
        cands = np.zeros((len(self._texts), k), dtype=np.int64)
        for i in range(len(self._texts)):
            row = [int(r) for r in self._sparse_top[i][:n_sparse]]
            have = set(row)
            for r in dense_top[i]:
                if len(row) == k:
                    break
                if r >= 0 and int(r) not in have:
                    row.append(int(r))
                    have.add(int(r))
            cands[i, : len(row)] = row
        return cands, names

    def with_hard_negatives(self, cands: np.ndarray) -> tuple[np.ndarray, int]:
        """``cands`` with every query's rejected concepts in its candidate set: a concept retrieval did not
        bring replaces the lowest-ranked candidate that is neither a positive nor rejected, by the name of that
        concept closest to the query in tf-idf. Returns the rows and how many candidates were brought in."""
        out = cands.copy()
        brought = 0
        for i, q in enumerate(self.queries):
            if not q.negatives:
                continue
            present = {str(c) for c in self._concepts[out[i]]}
            missing = sorted(q.negatives - present)
            if not missing:
                continue
            free = [j for j in range(out.shape[1] - 1, -1, -1)
                    if self._concepts[out[i, j]] not in q.concept_ids and self._concepts[out[i, j]] not in q.negatives]
            for cid, j in zip(missing, free, strict=False):
                rows = np.asarray(self.table.concept_names(cid), dtype=np.int64)
                if not len(rows):
                    continue
                best = rows[int(np.argmax(self.sparse.score([q.text], rows[None, :])[0]))] if len(rows) > 1 else rows[0]
                out[i, j] = int(best)
                brought += 1
        return out, brought

    def prepare_epoch(self, epoch: int, device: torch.device) -> list[np.ndarray]:
        cands, names = self.retrieve_candidates(device)
        cands, brought = self.with_hard_negatives(cands)
        sparse = self.sparse.score(self._texts, cands).astype(np.float32)
        cand_concepts = self._concepts[cands]
        targets = np.array(
            [[c in q.concept_ids for c in row] for q, row in zip(self.queries, cand_concepts, strict=True)],
            dtype=bool,
        ).reshape(cands.shape)
        negatives = np.array(
            [[c in q.negatives for c in row] for q, row in zip(self.queries, cand_concepts, strict=True)],
            dtype=bool,
        ).reshape(cands.shape)
        self._data = _EpochData(cands, None, sparse, targets, negatives)
        self._metrics = {
            "candidate_recall": float(targets.any(1).mean()) if len(targets) else 0.0,
            "sparse_weight": float(self.model.sparse_weight.detach()),
            "hard_negatives": float(negatives.sum()),
            "hard_negatives_brought_in": float(brought),
        }
        order = list(range(len(self.queries)))
        random.Random(self.config.seed + epoch).shuffle(order)
        bs = self.config.batch_size
        return [np.asarray(order[i : i + bs], dtype=np.int64) for i in range(0, len(order), bs)]

    def epoch_metrics(self) -> dict[str, float]:
        return {**self._metrics, "sparse_weight": float(self.model.sparse_weight.detach())}

    # --- one step ------------------------------------------------------------------------------------

    def batch_loss(self, batch: np.ndarray, device: torch.device) -> tuple[torch.Tensor, int]:
        assert self._data is not None, "prepare_epoch() first"
        data = self._data
        cands = data.candidates[batch]  # [b, k]
        encoder = self.model.encoder
        b = len(batch)
        queries = [self._texts[i] for i in batch]
        if self._name_features is not None and self._query_features is not None:
            # Head scope: the same S(m, n) and loss, on the frozen transformer's cached features.
            qf = torch.as_tensor(self._query_features[batch], device=device)  # [b, h]
            cf = torch.as_tensor(self._name_features[cands.reshape(-1)], device=device)  # [b*k, h]
            q = encoder.project(qf)  # [b, h]
            c = encoder.project(cf).view(b, cands.shape[1], -1)  # [b, k, h]
        else:
            unique_rows, inverse = np.unique(cands, return_inverse=True)
            texts = queries + [self.table.names[r] for r in unique_rows]
            tokens = {k: v.to(device) for k, v in encoder.tokenize(texts, self.config.max_length).items()}
            vectors = encoder(tokens)  # [b + u, h]
            q = vectors[:b]  # [b, h]
            inv = torch.as_tensor(inverse.reshape(cands.shape), device=device)
            c = vectors[b:][inv]  # [b, k, h]
        sparse = torch.as_tensor(data.sparse[batch], device=device)  # [b, k]
        targets = torch.as_tensor(data.targets[batch], device=device)  # [b, k]
        negatives = torch.as_tensor(data.negatives[batch], device=device)  # [b, k]
        scores = self.model.score(q, c, sparse)
        return self.loss_fn(scores, targets, negatives), b

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        if self.head_only and self.model.encoder.head is not None:
            torch.save(self.model.encoder.head.state_dict(), folder / "head.pt")
        else:
            self.model.encoder.save(folder / "encoder")
        (folder / "sparse_weight.txt").write_text(f"{float(self.model.sparse_weight.detach())}\n")


def train_biosyn(
    encoder: TransformerEncoder,
    table: NameTable,
    sparse: SparseEncoder,
    queries: Sequence[TrainingQuery],
    config: BioSynConfig | None = None,
    checkpoint_dir: str | Path | None = None,
    on_step: ProgressCallback | None = None,
    on_epoch_end: ProgressCallback | None = None,
    device: str | None = None,
) -> tuple[BioSynModel, list[dict[str, Any]]]:
    """Train ``encoder`` in place on ``queries`` against ``table``; returns the model (λ) and the history."""
    config = config or BioSynConfig()
    encoder.max_length = config.max_length
    model = BioSynModel(encoder, config.initial_sparse_weight, config.dense_scale)
    task = BioSynTask(model, table, sparse, queries, config)
    trainer = Trainer(config, device=device, checkpoint_dir=checkpoint_dir, on_step=on_step,
                      on_epoch_end=on_epoch_end, phase="biosyn")
    history = trainer.fit(task)
    model.cpu()
    return model, history
