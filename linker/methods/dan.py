"""DAN (Fivez, Šuster and Daelemans, BioNLP 2021) as a training method: the deep averaging name encoder
(:class:`linker.encoders.dan.DANEncoder`) trained on the classes of one hierarchy level, then published as
the dense half of a hybrid linker.

The objective (section 3.2), for every training name n, once per epoch, in batches of 64:

    L = α · L_sem + β · L_cont + γ · L_ground,    α = β = γ = 1
    L_sem    = max(d(f(n), f(n_pos)) - d(f(n), f(n_neg)) + 0.1, 0)   n_pos: a random name of n's class
    L_cont   = d(f(n), u_n)                                           u_n: n's mean word vector
    L_ground = d(f(n), (u_p + u_n) / 2)                               u_p: mean u_n of the class's names

with d the cosine distance. One triplet per name keeps the largest classes from dominating (section 5.1).
A name whose class has no other name is its own positive: dropout makes the two passes differ, and the
triplet term still pushes the negative beyond the margin.

Negatives: distance-weighted sampling (Wu et al. 2017), which the paper applies "over all training names".
Two measured departures on a CPU, both settings (``pool_size``, ``candidates``):

- the pool. Scoring every anchor against every training name is a full n x n product per epoch: with
  :func:`linker.losses.distance_weighted_negatives` over MEDIC's 76K names, about 20 minutes per epoch on
  this project's CPU (one thread, most of it the element-wise weights). Here each chunk of 1,024 anchors
  draws a fresh random pool of ``pool_size`` training names (0: all of them, the paper); every training
  name is encoded once per epoch, as in the paper.
- the candidates. Only each anchor's ``candidates`` nearest allowed pool names (one matrix product and a
  top-k) are weighed, with the weights of :func:`~linker.losses.distance_weighted_negatives` (1/q(d),
  d clipped below at 0.5; names beyond 1.4, which give no loss, only when nothing nearer is left). The
  authors' released code does the same with the 200 nearest names and weights 1/(1 - cos). Every name
  within the clip weighs the same, and a fresh DAN's encodings are concentrated: measured on MEDIC (pools
  of 8,192 names, fastText trained on NCBI), the whole-pool weights pick a negative of median rank 1,725
  among an untrained DAN's neighbours (9 for the fastText mean vectors, whose 90th percentile is 72), so
  the top-k is what keeps the negatives hard from the first epoch. ``candidates`` >= the pool is the
  exact sampler.

Levels (:mod:`linker.hierarchy.levels`): level 0 trains on synonym sets (the linker's dictionary with the
training mentions; early stopping on dense dev Acc@1, :func:`normalization_accuracy`); level L >= 1 on the
classes of one of ``inputs.hierarchies`` at that level (early stopping on the mAP of semantic similarity
ranking of held-out names, one per class, the paper's protocol). Either way the result is a name encoder,
published as a linker over ``inputs.table``. Training stops after ``patience`` epochs (the paper: 10)
without a better score, after ``max_epochs``, or when ``max_minutes`` are spent; the best epoch's weights
are kept.
"""

from __future__ import annotations

import copy
import random
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch
from scipy import sparse

from linker.encoders.dan import DANEncoder
from linker.encoders.wordvec import WordVectors
from linker.hierarchy.graph import HierarchySource, NoHierarchyError
from linker.hierarchy.levels import (
    LevelClasses,
    hold_out_per_class,
    hypernym_mrr,
    hypernyms,
    level_classes,
    semantic_similarity_map,
)
from linker.losses import CosineDistanceLoss, CosineTripletLoss, distance_weighted_negatives
from linker.methods.base import Method, Report, TrainingCallbacks, TrainingInputs
from linker.methods.dan_params import DANParams, DANRecipeConfig, dan_config
from linker.methods.word_vectors import (
    names_per_second,
    normalization_accuracy,
    publish_fast_linker,
    split_dev_pairs,
    word_vectors_for,
)
from linker.train import choose_device

__all__ = ["DANRecipeConfig", "train_dan_artifact", "DAN", "sample_negatives", "training_classes"]

_CHUNK = 1024  # anchors whose negatives are sampled together (one pool, one matrix product)


# --- the data ---------------------------------------------------------------------------------------------


def _hierarchy(inputs: TrainingInputs, name: str | None) -> HierarchySource:
    if name is not None:
        for source in inputs.hierarchies:
            if source.name == name:
                return source
        known = ", ".join(s.name for s in inputs.hierarchies) or "none"
        raise ValueError(f"no hierarchy named {name!r} among the inputs (given: {known})")
    for source in inputs.hierarchies:
        if source.hierarchical and source.edge_count:
            return source
    raise NoHierarchyError("DAN above level 0 trains on the classes of a hierarchy level, and no dictionary with "
                           "a hierarchy was given; train level 0 (synonym sets) instead")


def training_classes(
    inputs: TrainingInputs, config: DANRecipeConfig
) -> tuple[LevelClasses, LevelClasses, list[tuple[str, str]], str | None]:
    """(training names, validation names, dev pairs, hierarchy name). Level 0: the dictionary's names and the
    training mentions by concept, validated on dev mentions (:func:`split_dev_pairs`), or, without any, on up
    to ``validation_names`` held-out dictionary names. Level >= 1: the hierarchy's level classes with held-out
    names (:func:`hold_out_per_class`)."""
    if config.level == 0:
        train_pairs, dev_pairs = split_dev_pairs(inputs)
        table = inputs.table
        pairs = list(zip(table.names, table.concept_ids, strict=True))
        pairs += [(text, table.resolve_id(cid) or cid) for text, cid in train_pairs]
        data = LevelClasses.from_pairs(pairs, level=0)
        if dev_pairs:
            return data, LevelClasses((), ()), dev_pairs, None
        train, held = hold_out_per_class(data, at_most=config.validation_names, seed=config.seed)
        return train, held, [], None
    source = _hierarchy(inputs, config.hierarchy)
    data = level_classes(source, config.level, config.top)
    if len(data.members) < 2:
        raise ValueError(f"{source.name} has {len(data.members)} class(es) at level {config.level}: DAN needs at "
                         "least two to tell apart")
    train, held = hold_out_per_class(data, at_least=config.validation_names, seed=config.seed)
    return train, held, [], source.name


class _Membership:
    """Which classes each training name belongs to, as a sparse [names, classes] matrix: the forbidden
    negatives of a chunk of anchors are one sparse product."""

    def __init__(self, data: LevelClasses) -> None:
        index = {c: k for k, c in enumerate(data.members)}
        rows = [i for i, cs in enumerate(data.classes) for _ in cs]
        cols = [index[c] for cs in data.classes for c in cs]
        self.matrix = sparse.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)),
                                        shape=(len(data), len(index)))
        self.transposed = self.matrix.T.tocsr()

    def share(self, anchors: np.ndarray, pool: np.ndarray | None) -> torch.Tensor:
        """[a, p] bool: anchor and pool name have a class in common (pool None: every name)."""
        other = self.transposed if pool is None else self.matrix[pool].T.tocsr()
        product = (self.matrix[anchors] @ other).toarray()
        return torch.from_numpy(product > 0)

    def prototype_targets(self, unit: np.ndarray) -> np.ndarray:
        """(u_p + u_n) / 2 per name [n, d], u_n unit and u_p the unit mean of the class's u_n (the mean of its
        classes' prototypes for a name of several)."""
        counts = np.asarray(self.matrix.sum(axis=0)).ravel()  # [classes]
        prototypes = (self.transposed @ unit) / np.maximum(counts, 1)[:, None]  # [classes, d]
        prototypes = _unit(prototypes)
        per_name = _unit(self.matrix @ prototypes)  # [n, d]
        return ((per_name + unit) / 2.0).astype(np.float32)


def _unit(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.asarray(x / np.maximum(norms, 1e-12), dtype=np.float32)


def _positives(data: LevelClasses, rows: np.ndarray, rng: random.Random) -> np.ndarray:
    """A random other name of one of each row's classes (the row itself when its classes have no other)."""
    out = np.empty(len(rows), dtype=np.int64)
    for k, i in enumerate(rows.tolist()):
        members = data.members[rng.choice(data.classes[i])]
        if len(members) == 1:
            out[k] = i
            continue
        j = members[rng.randrange(len(members) - 1)]
        out[k] = members[-1] if j == i else j
    return out


# --- negative sampling --------------------------------------------------------------------------------------


def sample_negatives(
    anchors: torch.Tensor, pool: torch.Tensor, forbidden: torch.Tensor, candidates: int = 32,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Distance-weighted negatives among each anchor's ``candidates`` nearest allowed pool names
    (:func:`linker.losses.distance_weighted_negatives`); [b] pool indices, -1 where none is allowed."""
    return distance_weighted_negatives(anchors, pool, forbidden, generator=generator, candidates=candidates)


# --- training -----------------------------------------------------------------------------------------------


class _MeanWordVectors:
    """The fastText baseline as a name encoder: unit mean word vectors (the DAN's input u_n). The numbers of
    :class:`linker.encoders.wordvec.MeanWordVectorEncoder`, through the DAN's embedding-bag table (one call
    per batch instead of a lookup per word: it scores the validation names every epoch)."""

    kind = "mean-word-vectors"

    def __init__(self, encoder: DANEncoder) -> None:
        self.encoder = encoder

    @property
    def dim(self) -> int:
        return self.encoder.dim

    def encode(self, texts: Sequence[str], batch_size: int = 4096) -> np.ndarray:
        return _unit(self.encoder.mean_vectors(texts).numpy())

    def fingerprint(self) -> str:
        return "mean:" + self.encoder.word_vectors.fingerprint()

    def save(self, folder: str | Path) -> None:
        self.encoder.word_vectors.save(folder)


class _Run:
    """One training run: the data as tensors, the model, the optimiser, the per-epoch loop."""

    def __init__(self, encoder: DANEncoder, train: LevelClasses, cfg: DANRecipeConfig, device: torch.device) -> None:
        self.encoder = encoder
        self.data = train
        self.cfg = cfg
        self.device = device
        self.membership = _Membership(train)
        u = encoder.mean_vectors(list(train.names)).numpy()  # [n, d] frozen inputs
        unit = _unit(u)
        self.u = torch.from_numpy(unit).to(device)
        self.ground = torch.from_numpy(self.membership.prototype_targets(unit)).to(device)
        self.optimizer = torch.optim.Adam(encoder.parameters(), lr=cfg.lr)
        self.triplet = CosineTripletLoss(cfg.margin)
        self.distance = CosineDistanceLoss()
        self.rng = random.Random(cfg.seed)
        self.np_rng = np.random.default_rng(cfg.seed)
        self.generator = torch.Generator(device=device.type).manual_seed(cfg.seed)
        self.step = 0

    @torch.no_grad()
    def _encoded(self, rows: np.ndarray | None) -> torch.Tensor:
        """Unit encodings of training names (rows None: all) with the current weights, dropout off."""
        self.encoder.eval()
        u = self.u if rows is None else self.u[torch.from_numpy(rows).to(self.device)]
        out = torch.cat([self.encoder(u[s:s + 8192]) for s in range(0, len(u), 8192)])
        self.encoder.train()
        return torch.nn.functional.normalize(out, dim=-1)

    def _negatives(self, encoded: torch.Tensor, anchors: np.ndarray) -> np.ndarray:
        """A negative per anchor (-1: none allowed) from a fresh random pool, by the epoch's encodings."""
        n = len(self.data)
        pool = None if not self.cfg.pool_size or self.cfg.pool_size >= n else \
            np.sort(self.np_rng.choice(n, self.cfg.pool_size, replace=False))
        forbidden = self.membership.share(anchors, pool).to(self.device)
        pool_vectors = encoded if pool is None else encoded[torch.from_numpy(pool).to(self.device)]
        picked = sample_negatives(encoded[torch.from_numpy(anchors).to(self.device)], pool_vectors, forbidden,
                                  self.cfg.candidates, generator=self.generator).cpu().numpy()
        if pool is None:
            return picked
        return np.where(picked >= 0, pool[np.maximum(picked, 0)], -1)

    def batch_loss(self, rows: np.ndarray, positives: np.ndarray, negatives: np.ndarray) -> tuple[torch.Tensor, dict[str, float]]:
        cfg = self.cfg
        valid = negatives >= 0
        idx = np.concatenate([rows, positives, negatives[valid]])
        f = self.encoder(self.u[torch.from_numpy(idx).to(self.device)])  # [2b + v, d]
        b = len(rows)
        anchors, pos = f[:b], f[b:2 * b]
        at = torch.from_numpy(rows).to(self.device)
        parts = {"cont": self.distance(anchors, self.u[at]), "ground": self.distance(anchors, self.ground[at])}
        if valid.any():
            mask = torch.from_numpy(valid).to(self.device)
            parts["sem"] = self.triplet(anchors[mask], pos[mask], f[2 * b:])
        else:
            parts["sem"] = anchors.sum() * 0.0
        loss = cfg.alpha * parts["sem"] + cfg.beta * parts["cont"] + cfg.gamma * parts["ground"]
        return loss, {k: float(v.detach()) for k, v in parts.items()}

    def epoch(self, epoch: int, deadline: float | None, callbacks: TrainingCallbacks, started: float) -> dict[str, Any]:
        """One pass over every training name (fewer when the deadline passes)."""
        cfg = self.cfg
        self.encoder.train()
        order = self.np_rng.permutation(len(self.data))
        sums = {"loss": 0.0, "sem": 0.0, "cont": 0.0, "ground": 0.0}
        seen, t0 = 0, time.perf_counter()
        encoded = self._encoded(None)  # the pool's encodings, once per epoch as in the paper
        sample_s = time.perf_counter() - t0
        stopped = False
        for c0 in range(0, len(order), _CHUNK):
            chunk = order[c0:c0 + _CHUNK]
            s0 = time.perf_counter()
            negatives = self._negatives(encoded, chunk)
            positives = _positives(self.data, chunk, self.rng)
            sample_s += time.perf_counter() - s0
            for b0 in range(0, len(chunk), cfg.batch_size):
                sl = slice(b0, b0 + cfg.batch_size)
                loss, parts = self.batch_loss(chunk[sl], positives[sl], negatives[sl])
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                self.optimizer.step()
                self.step += 1
                items = len(chunk[sl])
                seen += items
                sums["loss"] += float(loss.detach()) * items
                for k, v in parts.items():
                    sums[k] += v * items
                if callbacks.on_step is not None and self.step % 50 == 0:
                    callbacks.on_step({"phase": "dan", "epoch": epoch, "epochs": cfg.max_epochs, "step": self.step,
                                       "loss": float(loss.detach()), "mentions_per_s": seen / max(time.perf_counter() - t0, 1e-9),
                                       "elapsed_s": time.perf_counter() - started})
                if deadline is not None and time.perf_counter() > deadline:
                    stopped = True
                    break
            if stopped:
                break
        train_s = time.perf_counter() - t0
        return {"epoch": epoch, "names": seen, "complete": not stopped, "train_s": train_s, "sample_s": sample_s,
                "names_per_s": seen / max(train_s, 1e-9)} | {k: v / max(seen, 1) for k, v in sums.items()}


def _score(encoder: Any, cfg: DANRecipeConfig, train: LevelClasses, held: LevelClasses,
           dev_pairs: Sequence[tuple[str, str]], inputs: TrainingInputs) -> float:
    """The stopping criterion: dense dev Acc@1 (level 0 with dev mentions), else held-out mAP."""
    if dev_pairs:
        return normalization_accuracy(encoder, inputs.table, dev_pairs)
    return semantic_similarity_map(encoder.encode, train.names, train.classes, held.names, held.classes)


def train_dan_artifact(
    inputs: TrainingInputs, config: DANRecipeConfig, callbacks: TrainingCallbacks, folder: Path
) -> Report:
    """Word vectors, the level's classes, DAN training with early stopping, and the linker over
    ``inputs.table`` (which gains the training pairs as names) written into ``folder``."""
    cfg = config
    torch.set_num_threads(max(1, cfg.threads))
    torch.manual_seed(cfg.seed)
    device = choose_device(cfg.device)
    vectors: WordVectors = word_vectors_for(inputs, cfg.fasttext, callbacks)
    train, held, dev_pairs, hierarchy = training_classes(inputs, cfg)
    if not len(train):
        raise ValueError("no training names at this level")
    metric = "dev_acc1" if dev_pairs else "validation_map"
    encoder = DANEncoder(vectors, cfg.dan)
    report: Report = dict(inputs.metadata) | {
        "level": cfg.level, "hierarchy": hierarchy, "top": cfg.top, "dan": asdict(cfg.dan),
        "word_vectors": vectors.describe(), "training_names": len(train), "validation_names": len(held),
        "dev_pairs": len(dev_pairs), "classes": train.class_sizes(), "stopping_metric": metric,
        "batch_size": cfg.batch_size, "lr": cfg.lr, "margin": cfg.margin, "weights": [cfg.alpha, cfg.beta, cfg.gamma],
        "pool_size": cfg.pool_size, "candidates": cfg.candidates, "device": str(device), "threads": cfg.threads,
    }
    baseline = _MeanWordVectors(encoder)
    report["baseline_" + metric] = _score(baseline, cfg, train, held, dev_pairs, inputs)
    callbacks.log(f"DAN level {cfg.level}: {len(train)} names in {len(train.members)} classes; "
                  f"stopping on {metric} (fastText baseline {report['baseline_' + metric]:.4f})")
    callbacks.phase("dan")
    encoder.to(device)
    run = _Run(encoder, train, cfg, device)
    started = time.perf_counter()
    deadline = started + cfg.max_minutes * 60.0 if cfg.max_minutes > 0 else None
    history: list[dict[str, Any]] = []
    best_score, best_epoch, best_state = -1.0, 0, copy.deepcopy(encoder.state_dict())
    for epoch in range(1, cfg.max_epochs + 1):
        summary = run.epoch(epoch, deadline, callbacks, started)
        e0 = time.perf_counter()
        summary[metric] = _score(encoder, cfg, train, held, dev_pairs, inputs)
        summary["eval_s"] = time.perf_counter() - e0
        summary["elapsed_s"] = time.perf_counter() - started
        history.append(summary)
        if summary[metric] > best_score:
            best_score, best_epoch, best_state = summary[metric], epoch, copy.deepcopy(encoder.state_dict())
        if callbacks.on_epoch_end is not None:
            callbacks.on_epoch_end({"phase": "dan", "epochs": cfg.max_epochs, "step": run.step,
                                    "mentions_per_s": summary["names_per_s"]} | summary)
        callbacks.log(f"epoch {epoch}: loss {summary['loss']:.4f}, {metric} {summary[metric]:.4f}")
        if epoch - best_epoch >= cfg.patience:
            report["stopped"] = "patience"
            break
        if deadline is not None and time.perf_counter() > deadline:
            report["stopped"] = "time budget"
            break
    else:
        report["stopped"] = "max_epochs"
    encoder.load_state_dict(best_state)
    encoder.cpu().eval()
    report |= {"history": history, "best_epoch": best_epoch, metric: best_score, "train_s": time.perf_counter() - started}
    if hierarchy is not None and cfg.level >= 1:
        source = _hierarchy(inputs, hierarchy)
        candidates = hypernyms(source, cfg.level, cfg.top)
        for name, enc in (("validation_hypernym_mrr", encoder), ("baseline_validation_hypernym_mrr", baseline)):
            report[name] = hypernym_mrr(enc.encode, held.names, held.classes, candidates.names, candidates.classes)
    report["names_per_s"] = names_per_second(encoder, inputs.table.names)
    return publish_fast_linker(inputs, encoder, callbacks, folder, report, method="dan",
                               prior_weight=cfg.prior_weight)


DAN: Method[DANRecipeConfig] = Method(
    name="dan", config_class=DANRecipeConfig, train=train_dan_artifact,
    description="deep averaging network over word vectors (Fivez et al. 2021): fast name encoder, trained on "
                "synonym sets or on the classes of a hierarchy level",
    label="DAN (name encoder over word vectors)",
    summary="DAN: a fast name encoder (averaging network)",
    params=DANParams, configure=dan_config,
)
