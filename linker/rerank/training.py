"""Training the LATTE re-ranker on cross-fitted examples, its evaluation, and its latent-type summaries.

Loss (the paper's section "Optimization"): a max-margin ranking loss between the best-scored gold candidate
and every other candidate (curator rejections weigh double), plus the known-type classification loss on the
mention and on each candidate (binary cross-entropy per type: MEDIC's slim mappings are multi-label).

Optionally (``part_weight``), the same ranking loss on each part alone, f and g: the paper's pairwise relation
constraint ("a mention and its ground truth candidate should share the same latent type distribution") then
holds for g whatever its weight in r. r starts as the retriever's order (w_f = w_g = 0), so through r alone the
parts get no gradient at first. Off by default, measured on BC5CDR (bench/RESULTS.md, 2026-11-27): with it g
separates gold from the other candidates (gold shares the mention's latent type 49 % of the time, the others
10 %; without it 36 % and 24 %), Acc@1 does not move, and the types of the dictionary's names collapse: 75-83 %
of them fall into one type of rare OMIM names, which then labels 9-18 % of the panel's top candidates.
"""

from __future__ import annotations

import copy
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from linker.dictionary import NameTable
from linker.evaluate import mean_average_precision
from linker.rerank.examples import RerankExample
from linker.rerank.model import LatteConfig, LatteModel
from linker.rerank.reranker import Reranker, RerankerSettings
from linker.rerank.results import LatentTypeSummary
from linker.rerank.states import Item, TokenStates, pad
from linker.train import ProgressCallback, Trainer, TrainerConfig

__all__ = ["RerankTrainingConfig", "PreparedExamples", "train_reranker", "evaluate_reranking",
           "latent_type_summaries", "known_type_labels"]


@dataclass
class RerankTrainingConfig(TrainerConfig):
    lr: float = 1e-3
    weight_decay: float = 0.0
    epochs: int = 8
    batch_size: int = 32
    margin: float = 1.0
    known_type_weight: float = 0.5  # 0: no known-type loss (the paper's LATTE-NKT)
    # Each part's own ranking loss (f; g with ``latent_margin``, g being a cosine of distributions in [0, 1]);
    # 0: the parts learn only through r (see the module docstring for why that is the default).
    part_weight: float = 0.0
    latent_margin: float = 0.5
    min_type_count: int = 5  # known types seen on fewer concepts are not classified
    max_known_types: int = 64
    # Held out of training to pick the epoch (the initial state, i.e. the retriever's ranking, included):
    # the last cross-fitting fold, whose mention strings are neither in its dictionary nor learned from the
    # other folds, so it sees what dev sees. Held-out documents drawn across folds chose the last epoch
    # every time while dev accuracy fell: the network had learned their strings from their fold-mates.
    # 0: no selection, the last epoch serves. (Examples that were not cross-fitted: 1 document in 10.)
    holdout_share: float = 0.1


def known_type_labels(concept_types: Mapping[str, Sequence[str]], min_count: int, limit: int) -> list[str]:
    counts: dict[str, int] = {}
    for types in concept_types.values():
        for t in set(types):
            counts[t] = counts.get(t, 0) + 1
    frequent = sorted((t for t, n in counts.items() if n >= min_count), key=lambda t: (-counts[t], t))
    return sorted(frequent[:limit])


class PreparedExamples:
    """Examples with their token states computed once (the transformer is frozen)."""

    def __init__(self, examples: Sequence[RerankExample], states: TokenStates, labels: Sequence[str],
                 concept_types: Mapping[str, Sequence[str]]) -> None:
        self.examples = list(examples)
        self.mentions: list[Item] = states.mentions([e.context for e in self.examples])
        names = sorted({c.name for e in self.examples for c in e.candidates})
        self.names: dict[str, Item] = dict(zip(names, states.names(names), strict=True)) if names else {}
        index = {t: i for i, t in enumerate(labels)}
        self.n_types = len(labels)

        def vector(cids: Sequence[str]) -> np.ndarray:
            v = np.zeros(self.n_types, dtype=np.float32)
            for cid in cids:
                for t in concept_types.get(cid, ()):
                    if t in index:
                        v[index[t]] = 1.0
            return v

        self.mention_types = [vector(sorted(e.gold)) for e in self.examples]
        self.candidate_types = [np.stack([vector([c.concept_id]) for c in e.candidates]) if e.candidates
                                else np.zeros((0, self.n_types), np.float32) for e in self.examples]

    def batch(self, idx: Sequence[int]) -> dict[str, Any]:
        exs = [self.examples[i] for i in idx]
        width = max(1, max(len(e.candidates) for e in exs))
        names = [self.names[e.candidates[j].name] if j < len(e.candidates) else self.names[e.candidates[0].name]
                 for e in exs for j in range(width)]
        feats = np.zeros((len(exs), width, exs[0].features.shape[1]), dtype=np.float32)
        valid = np.zeros((len(exs), width), dtype=bool)
        gold = np.zeros((len(exs), width), dtype=bool)
        weight = np.zeros((len(exs), width), dtype=np.float32)
        ctypes = np.zeros((len(exs), width, self.n_types), dtype=np.float32)
        for i, e in enumerate(exs):
            n = len(e.candidates)
            feats[i, :n] = e.features
            valid[i, :n] = True
            for j, c in enumerate(e.candidates):
                gold[i, j] = c.concept_id in e.gold
                weight[i, j] = 2.0 if c.concept_id in e.rejected else 1.0
            ctypes[i, :n] = self.candidate_types[idx[i]]
        return {
            "mention": pad([self.mentions[i] for i in idx]),
            "candidates": pad(names),
            "features": torch.from_numpy(feats),
            "valid": torch.from_numpy(valid),
            "gold": torch.from_numpy(gold),
            "weight": torch.from_numpy(weight),
            "mention_types": torch.from_numpy(np.stack([self.mention_types[i] for i in idx])),
            "candidate_types": torch.from_numpy(ctypes),
        }


class _LatteTask:
    def __init__(self, model: LatteModel, data: PreparedExamples, cfg: RerankTrainingConfig,
                 dev: Callable[[], dict[str, float]] | None) -> None:
        self.module: nn.Module = model
        self.model_config = model.config
        self.data = data
        self.cfg = cfg
        self.dev = dev
        # Only examples the re-ranker can get right teach it anything: gold among the candidates.
        self.trainable = [i for i, e in enumerate(data.examples) if e.positives and len(e.candidates) > 1]
        self._rng = random.Random(cfg.seed)

    def parameter_groups(self) -> list[dict[str, Any]]:
        return [{"params": [p for p in self.module.parameters() if p.requires_grad]}]

    def prepare_epoch(self, epoch: int, device: torch.device) -> Sequence[Any]:
        order = list(self.trainable)
        self._rng.shuffle(order)
        size = self.cfg.batch_size
        return [order[i : i + size] for i in range(0, len(order), size)]

    def batch_loss(self, batch: Sequence[int], device: torch.device) -> tuple[torch.Tensor, int]:
        b = self.data.batch(batch)
        out = self.module(_to(b["mention"], device), _to(b["candidates"], device), b["features"].to(device))
        loss = ranking_loss(out.score, b, self.cfg.margin, device) + self.cfg.known_type_weight * type_loss(
            out.mention_known_logits, out.candidate_known_logits, b, device)
        if self.cfg.part_weight > 0:
            config = self.model_config
            if config.use_match:
                loss = loss + self.cfg.part_weight * ranking_loss(out.match, b, self.cfg.margin, device)
            if config.use_latent:
                loss = loss + self.cfg.part_weight * ranking_loss(out.type_similarity, b, self.cfg.latent_margin, device)
        return loss, len(batch)

    def epoch_metrics(self) -> dict[str, float]:
        return self.dev() if self.dev is not None else {}

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        torch.save(self.module.state_dict(), folder / "model.pt")


def _to(t: tuple[torch.Tensor, ...], device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    a, b, c = (x.to(device) for x in t)
    return a, b, c


def ranking_loss(score: torch.Tensor, b: dict[str, Any], margin: float, device: torch.device) -> torch.Tensor:
    """max(0, M - r_pos + r_neg) for each negative, r_pos the best-scored gold candidate."""
    valid, gold, weight = b["valid"].to(device), b["gold"].to(device), b["weight"].to(device)
    pos = score.masked_fill(~gold, -1e4).max(1).values  # [B]
    neg = valid & ~gold
    hinge = (margin - pos.unsqueeze(1) + score).clamp(min=0) * weight
    return (hinge * neg).sum() / neg.sum().clamp(min=1)


def type_loss(mention_logits: torch.Tensor | None, candidate_logits: torch.Tensor | None, b: dict[str, Any],
              device: torch.device) -> torch.Tensor:
    if mention_logits is None or candidate_logits is None:
        return torch.zeros((), device=device)
    bce = nn.functional.binary_cross_entropy_with_logits
    mt = b["mention_types"].to(device)
    has = mt.sum(-1) > 0
    loss = bce(mention_logits[has], mt[has]) if has.any() else torch.zeros((), device=device)
    ct = b["candidate_types"].to(device)
    chas = (ct.sum(-1) > 0) & b["valid"].to(device)
    if chas.any():
        loss = loss + bce(candidate_logits[chas], ct[chas])
    return loss


def score_examples(reranker: Reranker, data: PreparedExamples, batch_size: int = 64) -> list[np.ndarray]:
    model = reranker.model.eval()
    out: list[np.ndarray] = []
    with torch.inference_mode():
        for start in range(0, len(data.examples), batch_size):
            idx = list(range(start, min(start + batch_size, len(data.examples))))
            b = data.batch(idx)
            scores = model(b["mention"], b["candidates"], b["features"]).score
            for i, j in enumerate(idx):
                out.append(scores[i, : len(data.examples[j].candidates)].numpy().copy())
    return out


def evaluate_reranking(reranker: Reranker, data: PreparedExamples, k: int = 10) -> dict[str, float]:
    """The LATTE protocol over the top-k (P@1, MAP, for the retriever's order and the re-ranked one) and the
    end-to-end accuracy (a composite mention is right only if every part is)."""
    scores = score_examples(reranker, data)
    per_mention: dict[int, list[tuple[bool, bool]]] = {}
    ret_lists: list[list[bool]] = []
    rr_lists: list[list[bool]] = []
    for e, s in zip(data.examples, scores, strict=True):
        rel = [c.concept_id in e.gold for c in e.candidates[:k]]
        order = np.argsort(-s[:k], kind="stable")
        ret_lists.append(rel)
        rr_lists.append([rel[i] for i in order])
        per_mention.setdefault(e.mention, []).append((bool(rel and rel[0]), bool(rel and rel[order[0]])))
    n = max(1, len(per_mention))
    return {
        "retriever_acc@1": sum(all(p[0] for p in parts) for parts in per_mention.values()) / n,
        "reranked_acc@1": sum(all(p[1] for p in parts) for parts in per_mention.values()) / n,
        "retriever_p@1": float(np.mean([bool(r and r[0]) for r in ret_lists])) if ret_lists else 0.0,
        "reranked_p@1": float(np.mean([bool(r and r[0]) for r in rr_lists])) if rr_lists else 0.0,
        "retriever_map": mean_average_precision(ret_lists),
        "reranked_map": mean_average_precision(rr_lists),
        "parts": float(len(data.examples)),
        "mentions": float(len(per_mention)),
    }


def latent_type_summaries(reranker: Reranker, table: NameTable, max_names: int = 20000, typical: int = 5,
                          seed: int = 13) -> list[LatentTypeSummary]:
    """Every latent type described by the dictionary's names: the preferred names of (up to ``max_names``)
    concepts are typed (from the stored name vectors where the re-ranker has them); a type's typical names are those to which it gives the highest probability, and its
    count is how many names have it as their most likely type. Ordered by count, largest first."""
    names = sorted({table.preferred_names[c] for c in table.concepts if table.preferred_names.get(c)})
    if len(names) > max_names:
        names = sorted(random.Random(seed).sample(names, max_names))
    model = reranker.model.eval()
    k = model.config.latent_types
    counts = torch.zeros(k, dtype=torch.long)
    top_p = torch.full((typical, k), -1.0)
    top_i = torch.zeros((typical, k), dtype=torch.long)
    with torch.inference_mode():
        for start in range(0, len(names), 256):
            chunk = names[start : start + 256]
            probs = model.candidate_latent_logits(reranker.pooled_names(chunk)).softmax(-1)  # [n, K]
            counts += torch.bincount(probs.argmax(-1), minlength=k)
            merged_p = torch.cat([top_p, probs])
            merged_i = torch.cat([top_i, torch.arange(start, start + len(chunk)).unsqueeze(1).expand(-1, k)])
            best = merged_p.topk(min(typical, merged_p.shape[0]), dim=0)
            top_p, top_i = best.values, merged_i.gather(0, best.indices)
    out = [LatentTypeSummary(t, int(counts[t]), tuple(names[int(i)] for p, i in zip(top_p[:, t], top_i[:, t], strict=True) if p >= 0))
           for t in range(k)]
    out.sort(key=lambda s: (-s.count, s.index))
    return out


class _BestState:
    """The model's weights at the epoch (0 = before training) that ranked the held-out mentions best."""

    def __init__(self) -> None:
        self.epoch = 0  # the epoch about to be offered
        self.chosen = 0
        self.acc = -1.0
        self.state: dict[str, torch.Tensor] | None = None

    def offer(self, acc: float, model: nn.Module) -> float:
        if acc > self.acc:
            self.acc, self.chosen, self.state = acc, self.epoch, copy.deepcopy(model.state_dict())
        self.epoch += 1
        return acc


def _split_by_document(examples: Sequence[RerankExample], share: float) -> tuple[list[RerankExample], list[RerankExample]]:
    """The held-out part: the last cross-fitting fold, else every 1/share-th document in id order."""
    if share <= 0:
        return list(examples), []
    folds = sorted({e.fold for e in examples if e.fold >= 0})
    if len(folds) >= 2:
        last = folds[-1]
        return [e for e in examples if e.fold != last], [e for e in examples if e.fold == last]
    documents = sorted({e.document for e in examples})
    if len(documents) < 2:
        return list(examples), []
    step = max(2, round(1 / share))
    held_docs = {d for i, d in enumerate(documents) if i % step == step - 1} or {documents[-1]}
    return [e for e in examples if e.document not in held_docs], [e for e in examples if e.document in held_docs]


def train_reranker(
    encoder_owner: Any,
    train: Sequence[RerankExample],
    dev: Sequence[RerankExample],
    concept_types: Mapping[str, Sequence[str]],
    model_config: LatteConfig,
    settings: RerankerSettings,
    cfg: RerankTrainingConfig,
    device: str | None = None,
    on_step: ProgressCallback | None = None,
    on_epoch_end: ProgressCallback | None = None,
    checkpoint_dir: Path | None = None,
    states: TokenStates | None = None,
) -> tuple[Reranker, dict[str, Any]]:
    """Train on ``train`` (dev, when given, is scored after each epoch); returns the re-ranker and a report.
    ``encoder_owner`` is the linker whose transformer provides the token states; ``states`` shares the token
    states already computed by an earlier training on the same examples (the ablations)."""
    encoder = encoder_owner.encoder
    t0 = time.perf_counter()
    labels = known_type_labels(concept_types, cfg.min_type_count, cfg.max_known_types) if cfg.known_type_weight > 0 else []
    model_config = LatteConfig(**{**model_config.to_dict(), "input_dim": encoder.dim, "known_types": len(labels)})
    model = LatteModel(model_config)
    reranker = Reranker(model, encoder, settings, labels, {k: tuple(v) for k, v in concept_types.items()})
    if states is not None:
        reranker.states = states
    states = reranker.states
    fit, held = _split_by_document(train, cfg.holdout_share)
    train_data = PreparedExamples(fit, states, labels, concept_types)
    held_data = PreparedExamples(held, states, labels, concept_types) if held else None
    dev_data = PreparedExamples(dev, states, labels, concept_types) if dev else None
    states_s = time.perf_counter() - t0
    best = _BestState()

    def epoch_metrics() -> dict[str, float]:
        model.eval()
        out: dict[str, float] = {}
        if held_data is not None:
            out["heldout_acc@1"] = best.offer(evaluate_reranking(reranker, held_data)["reranked_acc@1"], model)
        else:
            best.epoch += 1
        if dev_data is not None:
            metrics = evaluate_reranking(reranker, dev_data)
            out |= {"dev_" + k: v for k, v in metrics.items() if k in ("reranked_acc@1", "reranked_p@1", "reranked_map")}
        return out

    epoch_metrics()  # epoch 0: the initial state, which ranks as the retriever does
    task = _LatteTask(model, train_data, cfg, epoch_metrics)
    history = Trainer(cfg, device=device or "cpu", checkpoint_dir=checkpoint_dir, on_step=on_step,
                      on_epoch_end=on_epoch_end, phase="latte").fit(task)
    model.to("cpu").eval()
    if best.state is not None and best.chosen == 0:
        # No epoch ranked the held-out fold better than the retriever. Epoch 0's weights would serve that
        # order, but with untrained type heads: every known type near 50 % and false type conflicts in the
        # panel. So the trained network stays for the types and only its scoring layer returns to the
        # retriever's order.
        model.rank_as_retriever()
    elif best.state is not None:
        model.load_state_dict(best.state)
    report: dict[str, Any] = {
        "train_examples": len(train_data.examples),
        "heldout_examples": len(held),
        "trainable_examples": len(task.trainable),
        "known_types": len(labels),
        "token_states_s": states_s,
        "latte": history,
        "chosen_epoch": best.chosen if best.state is not None else cfg.epochs,
        "heldout_acc@1": best.acc if best.state is not None else None,
        "train_s": time.perf_counter() - t0 - states_s,
    }
    if dev_data is not None:
        report["dev"] = evaluate_reranking(reranker, dev_data)
    return reranker, report
