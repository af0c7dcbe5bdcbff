"""The mention tagger as a training method: the project's transformer fine-tuned as a BIO token classifier.

Training data are whole documents (``inputs.documents``): each of their mentions (of ``inputs.mention_types``
when given) is a gold span, every other word "no mention". Documents become windows of ``max_length`` subword
tokens exactly as :class:`~linker.detect.tagger.Tagger` reads them (first-subtoken labels, windows sharing
``stride`` tokens), and the model is trained with token-level cross-entropy (Devlin et al. 2019, section 4.3:
the first subtoken of each word is classified, the others ignored), AdamW, linear warm-up then linear decay.

**Dictionary features** (:mod:`linker.detect.gazetteer`, on by default when the inputs carry a dictionary):
the tagger also reads which tokens a dictionary match covers, the matcher being over the dictionary's names
(``inputs.names``, else the table's) plus the training mentions' texts. Training documents are cross-fitted:
each is matched without its own fold's mentions (``gazetteer_folds``), as a new document will be.

With ``inputs.dev_documents``, the tagger is scored after every epoch (mention-level precision/recall/F1,
exact and overlapping spans, :func:`~linker.detect.metrics.span_prf`), the best epoch by exact F1 is the one
kept, and its figures are the report's ``metrics``. The artifact is the tagger's folder
(:meth:`Tagger.save`); ``inputs.metadata`` (the web app's span provenance counts) is copied into it and into
the report.
"""

from __future__ import annotations

import copy
import math
import random
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from linker.data import PubTatorDocument
from linker.methods.base import DETECTOR, Method, Report, TrainingCallbacks, TrainingInputs
from linker.methods.tagger_params import TaggerParams, TaggerRecipeConfig, tagger_config

__all__ = ["TAGGER", "TaggerRecipeConfig", "train_tagger_artifact", "gold_spans", "score_tagger"]


def gold_spans(doc: PubTatorDocument, mention_types: frozenset[str] | set[str] | None) -> list[tuple[int, int]]:
    """A document's mention offsets, of the given types (None: all)."""
    return sorted({(m.start, m.end) for m in doc.mentions if mention_types is None or m.mention_type in mention_types})


def score_tagger(
    tagger: Any, documents: Sequence[PubTatorDocument], mention_types: frozenset[str] | set[str] | None,
    batch_size: int = 32,
) -> dict[str, float]:
    """Mention-level figures of ``tagger`` on ``documents``: precision/recall/f1 (exact spans) and the same
    with ``_overlap`` (overlapping spans)."""
    from linker.detect.metrics import span_prf

    gold = [gold_spans(d, mention_types) for d in documents]
    predicted = [[(s.start, s.end) for s in spans] for spans in tagger.predict([d.text for d in documents], batch_size)]
    exact = span_prf(gold, predicted, "exact")
    overlap = span_prf(gold, predicted, "overlap")
    return {"f1": exact["f1"], "precision": exact["precision"], "recall": exact["recall"],
            "f1_overlap": overlap["f1"], "precision_overlap": overlap["precision"],
            "recall_overlap": overlap["recall"], "gold": exact["gold"], "predicted": exact["predicted"]}


# (token ids with [CLS]/[SEP], labels with -100 where not scored, dictionary features or None)
_Example = tuple[list[int], list[int], list[int] | None]


def mention_texts(doc: PubTatorDocument, mention_types: frozenset[str] | set[str] | None) -> list[str]:
    """The text of a document's mentions (of the given types; None: all)."""
    return [m.text for m in doc.mentions if (mention_types is None or m.mention_type in mention_types) and m.text]


def _examples(
    tagger: Any, documents: Sequence[PubTatorDocument], types: frozenset[str] | None, tiles: bool = True,
    matchers: Sequence[Any] | None = None,
) -> tuple[list[_Example], int]:
    """Every window (``tiles``: every tile) of every document as a training example, and the number of spans
    taught; ``matchers[i]`` gives document ``i``'s dictionary matches (the cross-fitted ones)."""
    from linker.detect.bio import to_bio
    from linker.detect.encoding import word_labels

    examples: list[_Example] = []
    n_spans = 0
    content = tagger.max_length - 2
    for i, doc in enumerate(documents):
        enc = tagger.encode(doc.text, matchers[i].find(doc.text) if matchers is not None else None)
        if not len(enc):
            continue
        spans = gold_spans(doc, types)
        n_spans += len(spans)
        labels = word_labels(enc, to_bio(enc.word_offsets(), spans))
        # Tiles (windows sharing no token, the last one shorter) teach each token once per epoch; the windows
        # the tagger reads with overlap by ``stride`` and end on the last token, so an abstract of 300 tokens is
        # two windows of 254 there: a third more tokens per epoch, most of them taught twice.
        starts = range(0, len(enc), content) if tiles else tagger.windows(enc)
        for start in starts:
            examples.append((tagger.window_ids(enc, start), [-100, *labels[start : start + content], -100],
                             tagger.window_features(enc, start)))
    return examples, n_spans


def _batches(examples: list[_Example], batch_size: int, rng: random.Random) -> list[list[_Example]]:
    """Shuffled batches of examples of similar length (less padding): shuffle, sort within runs of 50 batches
    by length, cut into batches, shuffle the batches."""
    order = examples[:]
    rng.shuffle(order)
    run = batch_size * 50
    batches: list[list[_Example]] = []
    for i in range(0, len(order), run):
        chunk = sorted(order[i : i + run], key=lambda e: len(e[0]))
        batches.extend(chunk[j : j + batch_size] for j in range(0, len(chunk), batch_size))
    rng.shuffle(batches)
    return batches


def train_tagger_artifact(
    inputs: TrainingInputs, config: TaggerRecipeConfig, callbacks: TrainingCallbacks, folder: Path
) -> Report:
    import torch

    from linker.detect.tagger import Tagger
    from linker.train import seed_everything

    documents = list(inputs.documents)[: config.max_documents] if config.max_documents else list(inputs.documents)
    types = frozenset(inputs.mention_types) if inputs.mention_types else None
    if not any(gold_spans(d, types) for d in documents):
        raise ValueError("the tagger learns from annotated documents, and no document has a mention"
                         + (f" of type {', '.join(sorted(types))}" if types else ""))
    t0 = time.perf_counter()
    torch.set_num_threads(config.num_threads)
    seed_everything(config.seed)
    callbacks.phase("examples")
    gazetteer, matchers = _dictionary_features(inputs, documents, types, config, callbacks)
    tagger = Tagger.from_base(inputs.base_model, config.max_length, config.stride, sorted(types or ()), config.device,
                              gazetteer)
    examples, n_spans = _examples(tagger, documents, types, config.train_on_tiles, matchers)
    del matchers  # one automaton per fold: drop them before training
    callbacks.log(f"{len(documents)} documents, {n_spans} spans, {len(examples)} windows of at most "
                  f"{config.max_length} tokens")
    callbacks.phase("train")
    train_started = time.perf_counter()
    history, best = _fit(tagger, examples, config, inputs.dev_documents, types, callbacks)
    train_s = time.perf_counter() - train_started
    report: Report = {
        "documents": len(documents), "spans": n_spans, "windows": len(examples), "epochs": config.epochs,
        "best_epoch": best["epoch"] if best else config.epochs, "train_s": train_s, "device": str(tagger.device),
        "base_model": tagger.metadata.get("base_model"), "mention_types": sorted(types or ()),
        "dictionary_features": {"names": len(gazetteer), "folds": config.gazetteer_folds} if gazetteer else None,
        "config": asdict(config), "metadata": dict(inputs.metadata), "history": history,
    }
    if best is not None:
        report["metrics"] = {k[len("dev_"):]: v for k, v in best.items() if k.startswith("dev_")}
        report["dev_documents"] = len(inputs.dev_documents)
    tagger.metadata = dict(tagger.metadata) | {
        "training": {k: v for k, v in report.items() if k not in ("history", "metadata")},
        "inputs": dict(inputs.metadata),
    }
    callbacks.phase("save")
    tagger.save(folder)
    report["seconds"] = time.perf_counter() - t0
    return report


def _dictionary_features(
    inputs: TrainingInputs, documents: Sequence[PubTatorDocument], types: frozenset[str] | None,
    config: TaggerRecipeConfig, callbacks: TrainingCallbacks,
) -> tuple[Any, list[Any] | None]:
    """The gazetteer a tagger with dictionary features reads (the dictionary's names and the training mentions'),
    and each training document's cross-fitted matcher; (None, None) without them."""
    dictionary_names = list(inputs.names) or list(inputs.table.names)
    if not (config.dictionary_features and dictionary_names):
        return None, None
    from linker.detect.gazetteer import Gazetteer, cross_fitted_matchers

    texts = [mention_texts(d, types) for d in documents]
    gazetteer = Gazetteer([*dictionary_names, *(t for ts in texts for t in ts)])
    matchers = cross_fitted_matchers(dictionary_names, texts, config.gazetteer_folds)
    callbacks.log(f"dictionary features: {len(dictionary_names)} dictionary names and the training mentions "
                  f"({len(gazetteer)} names in all), training documents cross-fitted over "
                  f"{config.gazetteer_folds} folds")
    return gazetteer, matchers


def _optimizer(tagger: Any, config: TaggerRecipeConfig, total_steps: int) -> tuple[Any, Any]:
    """AdamW and its schedule: the learning rate rises linearly over the warm-up steps, then decays linearly to 0."""
    import torch

    # No weight decay on biases and LayerNorm weights, as BERT's fine-tuning does (nor on the dictionary
    # feature vectors: an embedding of three rows, like the position embeddings' LayerNorm, is not decayed).
    decay = [p for n, p in tagger.model.named_parameters() if not (n.endswith("bias") or "LayerNorm" in n)]
    no_decay = [p for n, p in tagger.model.named_parameters() if n.endswith("bias") or "LayerNorm" in n]
    if tagger.feature_embedding is not None:
        no_decay += list(tagger.feature_embedding.parameters())
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": config.weight_decay},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=config.lr)
    warmup_steps = int(config.warmup * total_steps)

    def schedule(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))

    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)


def _fit(
    tagger: Any, examples: list[_Example], config: TaggerRecipeConfig, dev_documents: Sequence[PubTatorDocument],
    types: frozenset[str] | None, callbacks: TrainingCallbacks,
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Train ``tagger`` on ``examples``: each epoch's summary, and the best one on the dev documents (whose
    weights the tagger ends with), None without dev documents (it ends with the last epoch's)."""
    import torch

    total_steps = math.ceil(len(examples) / config.batch_size) * config.epochs
    # linker.train.Trainer has no learning-rate schedule, and fine-tuning a transformer for token
    # classification wants warm-up and decay: this loop is the Trainer's with a LambdaLR added.
    optimizer, scheduler = _optimizer(tagger, config, total_steps)
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=-100, label_smoothing=config.label_smoothing)
    rng = random.Random(config.seed)
    history: list[dict[str, Any]] = []
    best: dict[str, Any] | None = None
    best_state: tuple[dict[str, torch.Tensor], dict[str, torch.Tensor] | None] | None = None
    step = 0
    train_started = time.perf_counter()
    for epoch in range(config.epochs):
        tagger.train(True)
        epoch_loss, epoch_items, window_t, window_items = 0.0, 0, time.perf_counter(), 0
        for batch in _batches(examples, config.batch_size, rng):
            value = _step(tagger, batch, loss_fn, optimizer, scheduler, config.grad_clip)
            step += 1
            epoch_loss += value * len(batch)
            epoch_items += len(batch)
            window_items += len(batch)
            if callbacks.on_step is not None and (step % 10 == 0 or step == total_steps):
                now = time.perf_counter()
                callbacks.on_step({"phase": "tagger", "epoch": epoch + 1, "epochs": config.epochs, "step": step,
                                   "total_steps": total_steps, "loss": value,
                                   "mentions_per_s": window_items / max(now - window_t, 1e-9),
                                   "elapsed_s": now - train_started, "lr": scheduler.get_last_lr()[0]})
                window_t, window_items = now, 0
        summary: dict[str, Any] = {"phase": "tagger", "epoch": epoch + 1, "epochs": config.epochs, "step": step,
                                   "total_steps": total_steps, "loss": epoch_loss / max(epoch_items, 1),
                                   "items": epoch_items, "elapsed_s": time.perf_counter() - train_started}
        if dev_documents:
            summary |= {f"dev_{k}": v for k, v in score_tagger(tagger, dev_documents, types).items()}
            if best is None or summary["dev_f1"] > best["dev_f1"]:
                best = summary
                features = tagger.feature_embedding
                best_state = (copy.deepcopy(tagger.model.state_dict()),
                              copy.deepcopy(features.state_dict()) if features is not None else None)
        history.append(summary)
        if callbacks.on_epoch_end is not None:
            callbacks.on_epoch_end(summary)
        callbacks.log(f"epoch {epoch + 1}/{config.epochs}: loss {summary['loss']:.4f}"
                      + (f", dev F1 {summary['dev_f1']:.4f} (overlap {summary['dev_f1_overlap']:.4f})"
                         if "dev_f1" in summary else ""))
    if best_state is not None:
        tagger.model.load_state_dict(best_state[0])
        if best_state[1] is not None and tagger.feature_embedding is not None:
            tagger.feature_embedding.load_state_dict(best_state[1])
    tagger.train(False)
    return history, best


def _step(tagger: Any, batch: list[_Example], loss_fn: Any, optimizer: Any, scheduler: Any, grad_clip: float) -> float:
    """One optimisation step on a batch of examples; its loss."""
    import torch

    ids, mask = tagger.collate([e[0] for e in batch])
    feats = tagger.collate_features([e[2] for e in batch], ids.shape[1])
    labels = torch.full(ids.shape, -100, dtype=torch.long)
    for i, e in enumerate(batch):
        labels[i, : len(e[1])] = torch.tensor(e[1], dtype=torch.long)
    logits = tagger.logits(ids, mask, feats)  # (batch, length, labels)
    loss = loss_fn(logits.reshape(-1, logits.shape[-1]), labels.to(tagger.device).reshape(-1))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if grad_clip > 0:
        torch.nn.utils.clip_grad_norm_(tagger.parameters(), grad_clip)
    optimizer.step()
    scheduler.step()
    return float(loss.detach())


TAGGER: Method[TaggerRecipeConfig] = Method(
    name="tagger", config_class=TaggerRecipeConfig, train=train_tagger_artifact,
    description="mention detection: the transformer fine-tuned as a BIO token classifier over words (windows of "
                "subword tokens, first-subtoken labels)",
    label="Mention tagger (BIO token classification)",
    summary="Mention tagger: finds the mentions of new documents", params=TaggerParams, configure=tagger_config, output=DETECTOR, base_model=True,
)
