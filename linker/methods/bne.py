"""BNE (Phan, Sun & Tay, ACL 2019) as a training method: the two-level BiLSTM name encoder
(:class:`linker.encoders.bne.BNEEncoder`) trained on the dictionary's synonym sets, then published as the
dense half of a hybrid linker.

The objective (section 3.2, option 2), every loss the logistic loss of a dot-product classifier with one
in-batch negative per anchor (:class:`linker.losses.LogisticPairLoss`; ``negatives`` > 1 averages several):

    L_BNE = L_syn + L_def + L_ctx
    L_syn   f(s) against f(s'), s' another name of s's concept (concepts with one name give no L_syn term)
    L_def   f(s) against g(c) = mean of q(s'') over the names s'' of s's concept
    L_ctx   f(s) against q(s) = mean of s's (frozen) word vectors

The examples are every name of the dictionary and every training mention as a name of its concept. An
epoch takes each name once as an anchor (or ``epoch_names`` of them, in turn), in batches of 64; its synonym s' is drawn afresh each epoch and
is encoded in the same pass, so L_def and L_ctx also apply to s' (the paper: "s or s', which are
interchangeable"). Negatives of the same concept are masked. Adam (lr 1e-3), gradients clipped at 5.0.

Early stopping (the paper: "average performance on validation sets of biomedical name normalization"):
dense-only Acc@1 of the dev pairs (:func:`linker.methods.word_vectors.split_dev_pairs`) after each epoch;
the best epoch's weights are kept; training stops after ``patience`` epochs without a gain, after
``epochs``, or when ``max_minutes`` (counted from the start of the run, word vectors included) are spent:
the epoch under way is cut short and scored. The report also gives the dev Acc@1 of the word vectors
alone (mean word vector of a name: the paper's SG_W baseline), so a run shows what the encoder added.

Measured on NCBI Disease (MEDIC 2012, 73,839 names; fastText on the 593 training abstracts and the names,
83 s; one thread on the project's shared 2-core CPU, ``epoch_names`` 16,384, 10-12 minutes in all). Dev
Acc@1 of the 318 distinct dev pairs against the dictionary's names, dense only: mean word vectors 0.519;
BNE at the paper's sizes 0.513 (1.06 passes over the names at ~135 names/s); BNE with :data:`FAST_BNE`
0.522 (1.8 passes, ~300-450 names/s, stopped by patience), 0.531 with dropout 0.1. The published linkers
on all 787 dev mentions (training mentions merged, abbreviations, composites, prior): dense Acc@1 0.830
(paper sizes) and 0.840 (fast) against 0.830 for mean word vectors; hybrid 0.840 / 0.844, where tf-idf
alone gives 0.875. On a CPU budget BNE barely moves from its word vectors: one random negative gives little
signal (even 2,574 training names are not learnt in 15 epochs: their synonym Acc@1 is 0.821 against the
word vectors' 0.823, 0.844 with 16 negatives), and fastText on one corpus is far from the paper's PubMed skip-gram (SG_W 0.800 there).
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

from linker.dictionary import NameTable
from linker.encoders.bne import BNEEncoder
from linker.encoders.wordvec import MeanWordVectorEncoder, WordVectors, tokenize
from linker.losses import LogisticPairLoss
from linker.methods.base import Method, Report, TrainingCallbacks, TrainingInputs
from linker.methods.bne_params import OBJECTIVES, BNEParams, BNERecipeConfig, bne_config
from linker.methods.word_vectors import (
    names_per_second,
    normalization_accuracy,
    publish_fast_linker,
    split_dev_pairs,
    word_vectors_for,
)

__all__ = ["BNERecipeConfig", "BNEExamples", "BNETask", "train_bne_artifact", "BNE", "OBJECTIVES"]

class BNEExamples:
    """The training names: ``names`` [n], each with its concept index ``concepts`` [n]; ``synonyms[c]`` the
    names of concept c; ``contexts`` q(s) [n, d] and ``definitions`` g(c) [concepts, d] as tensors."""

    def __init__(self, table: NameTable, pairs: Sequence[tuple[str, str]], vectors: WordVectors) -> None:
        concept_index: dict[str, int] = {}
        seen: set[tuple[str, int]] = set()
        self.names: list[str] = []
        concepts: list[int] = []
        mentions = ((m, table.resolve_id(cid)) for m, cid in pairs)
        for name, cid in [*zip(table.names, table.concept_ids, strict=True), *mentions]:
            if cid is None or not tokenize(name):
                continue  # an id outside the dictionary, or a name without a word
            c = concept_index.setdefault(cid, len(concept_index))
            if (name, c) not in seen:
                seen.add((name, c))
                self.names.append(name)
                concepts.append(c)
        if not self.names:
            raise ValueError("BNE has no training names: the dictionary holds no name with a letter or digit")
        self.concept_ids = list(concept_index)
        self.concepts = np.asarray(concepts, dtype=np.int64)
        self.synonyms: list[list[int]] = [[] for _ in concept_index]
        for row, c in enumerate(concepts):
            self.synonyms[c].append(row)
        contexts = vectors.name_vectors(self.names)  # [n, d]
        definitions = np.zeros((len(concept_index), vectors.dim), dtype=np.float32)
        np.add.at(definitions, self.concepts, contexts)
        definitions /= np.bincount(self.concepts, minlength=len(concept_index))[:, None]
        self.contexts = torch.from_numpy(contexts)
        self.definitions = torch.from_numpy(definitions)

    def __len__(self) -> int:
        return len(self.names)

    def synonym_of(self, row: int, rng: random.Random) -> int:
        """Another name of the row's concept, at random; -1 when the concept has one name."""
        rows = self.synonyms[int(self.concepts[row])]
        if len(rows) < 2:
            return -1
        pick = rows[rng.randrange(len(rows) - 1)]
        return pick if pick != row else rows[-1]


class BNETask:
    """One epoch of BNE training at a time, and the losses of a batch."""

    def __init__(self, encoder: BNEEncoder, examples: BNEExamples, cfg: BNERecipeConfig) -> None:
        self.encoder = encoder
        self.examples = examples
        self.cfg = cfg
        self.loss = LogisticPairLoss()
        self.optimizer = torch.optim.Adam(encoder.parameters(), lr=cfg.lr)
        self.rng = random.Random(cfg.seed)
        self.step = 0
        self._queue: list[int] = []  # anchors not yet taken, in this pass's shuffled order

    def epoch_anchors(self) -> list[int]:
        """The next ``epoch_names`` anchors (every name when 0), each name once per pass."""
        wanted = self.cfg.epoch_names or len(self.examples)
        anchors: list[int] = []
        while len(anchors) < wanted:
            if not self._queue:
                self._queue = list(range(len(self.examples)))
                self.rng.shuffle(self._queue)
            take = min(wanted - len(anchors), len(self._queue))
            anchors.extend(self._queue[:take])
            del self._queue[:take]
        return anchors

    def pair_loss(self, anchors: torch.Tensor, targets: torch.Tensor, groups: torch.Tensor) -> torch.Tensor:
        """The logistic loss with ``negatives`` in-batch negatives per anchor (distinct offsets): the positive
        term plus the mean of the negative terms. One negative is the paper's setting."""
        b = anchors.shape[0]
        if self.cfg.negatives <= 1 or b <= 2:
            return self.loss(anchors, targets, groups)
        shifts = self.rng.sample(range(1, b), min(self.cfg.negatives, b - 1))
        return torch.stack([self.loss(anchors, targets, groups, shift=k) for k in shifts]).mean()

    def batch_loss(self, anchors: list[int]) -> tuple[torch.Tensor, dict[str, float]]:
        """L_BNE of a batch of anchor rows, and each objective's value."""
        ex = self.examples
        partners = [ex.synonym_of(a, self.rng) for a in anchors]
        paired = [i for i, p in enumerate(partners) if p >= 0]
        rows = anchors + [partners[i] for i in paired] if "syn" in self.cfg.objectives else list(anchors)
        encoded = self.encoder([ex.names[r] for r in rows])  # [b + s, d]
        index = torch.tensor(rows)
        groups = torch.from_numpy(ex.concepts[rows])  # [b + s]
        parts: dict[str, torch.Tensor] = {}
        if "syn" in self.cfg.objectives and paired:
            # [s, d] anchors against [s, d] synonyms; the negatives are the other rows' synonyms
            chosen = torch.tensor(paired)
            parts["syn"] = self.pair_loss(encoded[chosen], encoded[len(anchors):], groups[chosen])
        if "def" in self.cfg.objectives:
            parts["def"] = self.pair_loss(encoded, ex.definitions[groups], groups)  # g(c) [b + s, d]
        if "ctx" in self.cfg.objectives:
            parts["ctx"] = self.pair_loss(encoded, ex.contexts[index], groups)  # q(s) [b + s, d]
        total = sum(parts.values(), encoded.sum() * 0.0)
        return total, {k: float(v.detach()) for k, v in parts.items()}

    def epoch(self, epoch: int, deadline: float | None, callbacks: TrainingCallbacks, started: float,
              total_steps: int) -> dict[str, Any]:
        """One epoch over this epoch's anchors (cut short at ``deadline``); its mean losses and speed."""
        cfg = self.cfg
        order = self.epoch_anchors()
        self.encoder.train()
        sums: dict[str, float] = {}
        batches = items = 0
        t0 = window_t = time.perf_counter()
        window_items = 0
        cut = False
        for start in range(0, len(order), cfg.batch_size):
            if deadline is not None and time.perf_counter() > deadline:
                cut = True
                break
            batch = order[start : start + cfg.batch_size]
            loss, parts = self.batch_loss(batch)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.encoder.parameters(), cfg.grad_clip)
            self.optimizer.step()
            self.step += 1
            batches += 1
            items += len(batch)
            window_items += len(batch)
            value = float(loss.detach())
            for key, v in {"loss": value, **parts}.items():
                sums[key] = sums.get(key, 0.0) + v
            if callbacks.on_step is not None and self.step % max(1, cfg.log_every) == 0:
                now = time.perf_counter()
                callbacks.on_step({"phase": "bne", "epoch": epoch, "epochs": cfg.epochs, "step": self.step,
                                   "total_steps": total_steps, "loss": value,
                                   "mentions_per_s": window_items / max(now - window_t, 1e-9),
                                   "elapsed_s": now - started} | {f"loss_{k}": v for k, v in parts.items()})
                window_items, window_t = 0, now
        train_s = time.perf_counter() - t0
        self.encoder.eval()
        means = {key: v / max(batches, 1) for key, v in sums.items()}
        return {"epoch": epoch, "steps": batches, "items": items, "train_s": train_s,
                "names_per_s_train": items / max(train_s, 1e-9), "cut_short": cut, "loss": means.pop("loss", 0.0),
                **{f"loss_{k}": v for k, v in means.items()}}


def train_bne_artifact(
    inputs: TrainingInputs, config: BNERecipeConfig, callbacks: TrainingCallbacks, folder: Path
) -> Report:
    """Word vectors, BNE on the dictionary's synonym sets and the training mentions, the hybrid linker:
    writes the artifact into ``folder``; ``inputs.table`` gains the training pairs as names."""
    cfg = config
    torch.set_num_threads(max(1, cfg.threads))
    torch.manual_seed(cfg.seed)
    started = time.perf_counter()
    deadline = started + 60.0 * cfg.max_minutes if cfg.max_minutes is not None else None
    vectors = word_vectors_for(inputs, cfg.fasttext, callbacks)
    train_pairs, dev_pairs = split_dev_pairs(inputs, share=cfg.dev_share, seed=cfg.seed)
    callbacks.phase("bne")
    examples = BNEExamples(inputs.table, train_pairs, vectors)
    encoder = BNEEncoder(vectors, cfg.bne)
    report: Report = dict(inputs.metadata) | {
        "training_pairs": len(inputs.pairs),
        "bne_training_pairs": len(train_pairs),
        "dev_pairs": len(dev_pairs),
        "dev_source": "dev documents" if inputs.dev_documents else f"{cfg.dev_share:.0%} of the training pairs",
        "examples": len(examples),
        "concepts": len(examples.concept_ids),
        "synonym_anchors": int(sum(len(s) for s in examples.synonyms if len(s) > 1)),
        "objectives": list(cfg.objectives),
        "bne": asdict(cfg.bne),
        "dim": encoder.dim,
        "parameters": sum(p.numel() for p in encoder.parameters()),
        "epochs": cfg.epochs, "epoch_names": cfg.epoch_names, "batch_size": cfg.batch_size, "lr": cfg.lr,
        "grad_clip": cfg.grad_clip, "patience": cfg.patience, "threads": cfg.threads,
        "max_minutes": cfg.max_minutes, "seed": cfg.seed,
        "word_vectors": vectors.describe(),
        "word_vectors_s": time.perf_counter() - started,
    }
    if dev_pairs:
        report["baseline_dev_acc"] = normalization_accuracy(MeanWordVectorEncoder(vectors), inputs.table, dev_pairs)
    callbacks.log(f"BNE on {len(examples)} names of {len(examples.concept_ids)} concepts, {len(dev_pairs)} dev "
                  f"pairs (mean word vectors: Acc@1 {report.get('baseline_dev_acc', float('nan')):.4f})")
    _fit(encoder, examples, dev_pairs, inputs.table, cfg, callbacks, deadline, report)
    report["train_s"] = time.perf_counter() - started
    report["names_per_s"] = names_per_second(encoder, inputs.table.names[:20000])
    report["names_per_s_threads"] = torch.get_num_threads()
    report["fingerprint"] = encoder.fingerprint()
    return publish_fast_linker(inputs, encoder, callbacks, folder, report, method="bne",
                               prior_weight=cfg.prior_weight)


def _fit(encoder: BNEEncoder, examples: BNEExamples, dev_pairs: Sequence[tuple[str, str]], table: NameTable,
         cfg: BNERecipeConfig, callbacks: TrainingCallbacks, deadline: float | None, report: Report) -> None:
    """Epochs with early stopping on dev Acc@1; leaves the best epoch's weights in ``encoder``."""
    task = BNETask(encoder, examples, cfg)
    total_steps = cfg.epochs * -(-(cfg.epoch_names or len(examples)) // cfg.batch_size)
    history: list[dict[str, Any]] = []
    best_acc, best_epoch, best_state, stale = -1.0, 0, None, 0
    started = time.perf_counter()
    report["stopped"] = "epochs"
    for epoch in range(1, cfg.epochs + 1):
        summary = task.epoch(epoch, deadline, callbacks, started, total_steps)
        if summary["steps"] == 0:
            report["stopped"] = "time budget"
            break
        t0 = time.perf_counter()
        acc = normalization_accuracy(encoder, table, dev_pairs) if dev_pairs else None
        summary |= {"dev_acc": acc, "dev_s": time.perf_counter() - t0, "elapsed_s": time.perf_counter() - started}
        history.append(summary)
        if acc is None or acc > best_acc:
            best_acc, best_epoch, stale = (acc if acc is not None else best_acc), epoch, 0
            best_state = copy.deepcopy(encoder.state_dict())
        else:
            stale += 1
        summary |= {"best_epoch": best_epoch, "phase": "bne", "epochs": cfg.epochs, "step": task.step,
                    "total_steps": total_steps, "mentions_per_s": summary["names_per_s_train"]}
        if callbacks.on_epoch_end is not None:
            callbacks.on_epoch_end(dict(summary))
        callbacks.log(f"BNE epoch {epoch}: loss {summary['loss']:.4f}, dev Acc@1 "
                      f"{'-' if acc is None else f'{acc:.4f}'}, {summary['train_s']:.0f} s")
        if summary["cut_short"] or (deadline is not None and time.perf_counter() > deadline):
            report["stopped"] = "time budget"
            break
        if stale >= cfg.patience:
            report["stopped"] = "patience"
            break
    if best_state is not None:
        encoder.load_state_dict(best_state)
    encoder.eval()
    report["history"] = history
    report["best_epoch"] = best_epoch
    report["best_dev_acc"] = best_acc if dev_pairs and best_epoch else None


BNE: Method[BNERecipeConfig] = Method(
    name="bne", config_class=BNERecipeConfig, train=train_bne_artifact,
    description="BNE (Phan et al. 2019): character and word BiLSTM over fastText vectors, trained on synonym "
                "sets with synonym, concept and context objectives",
    label="BNE (name encoder over word vectors)",
    summary="BNE: a fast name encoder (BiLSTM)", params=BNEParams,
    configure=bne_config,
)
