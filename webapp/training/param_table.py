"""A run's parameters as a person reads them: labels, resolved values, and which ones are defaults.

A run keeps its params as JSON (:mod:`webapp.training.params`), where BioSyn's scope-dependent ones are 0 and
HiPrBERT's ``None`` until the worker knows its device ("the scope's default"). :func:`parameter_rows` shows what
the run trains (or will train) with: once the worker has recorded its device the scope is known and those
values are the scope's (:func:`webapp.training.params.resolved_params`); before, both choices are shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from linker.train import SCOPE_DEFAULTS, resolve_scope
from webapp.training.hiprbert import SCOPE_DEPENDENT as HIPRBERT_SCOPE_DEPENDENT
from webapp.training.hiprbert import scope_defaults
from webapp.training.params import BIOSYN, HIPRBERT, LATTE, SCOPE_DEPENDENT, default_params, resolved_params
from webapp.training.tagger_params import TAGGER
from webapp.training.word_vector_params import BNE, DAN, FASTTEXT

__all__ = ["ParamRow", "parameter_rows", "run_scope"]

SCOPE_LABELS = {"full": "full (the paper: the whole model)", "student": "student (3 layers: the CPU choice)",
                "head": "head (frozen transformer)"}
ALL = "all"

# name -> label; a name missing here is shown as it is written, underscores as spaces.
LABELS: dict[str, str] = {
    "train_scope": "Training scope", "epochs": "Epochs", "lr": "Learning rate", "topk": "Top-k candidates",
    "dense_ratio": "Dense share α", "batch_size": "Batch size", "max_length": "Max length (tokens)",
    "skip_pretrain": "Synonym pre-training", "pretrain_epochs": "Synonym pre-training epochs",
    "pretrain_max_pairs": "Synonym pre-training pairs", "max_queries": "Training queries",
    "device": "Device asked for", "weight_decay": "Weight decay", "grad_clip": "Gradient clipping", "seed": "Seed",
    "amp": "Mixed precision (GPU)", "num_threads": "CPU threads", "initial_sparse_weight": "Initial sparse weight λ",
    "sparse_weight_lr": "Learning rate of λ", "head_lr": "Head learning rate", "head_hidden": "Head width",
    "dense_scale": "Dense score scale", "reencode_batch_size": "Re-encoding batch size",
    "quantized_reencode": "Int8 re-encoding (CPU)", "dedupe_queries": "Merge identical training pairs",
    "prior_weight": "Concept prior weight", "step_delay_s": "Delay per step (tests)",
    # LATTE
    "latent_types": "Latent types K", "top_k": "Candidates re-ranked (top-k)", "known_type_weight": "Known-type loss weight",
    "part_weight": "Own ranking loss of f and g",
    "min_type_count": "Min concepts per known type", "hidden": "Hidden width", "lstm_layers": "Recurrent layers",
    "window_words": "Context window (words each side)", "folds": "Cross-fitting folds", "max_mentions": "Training mentions",
    "base_index": "Re-ranks index",
    # HiPrBERT
    "dictionaries": "Dictionaries", "max_batches": "Batches per epoch", "distances": "Distances",
    "holdout_share": "Held-out concepts",
    # fastText, BNE, DAN
    "dim": "Dimension", "window": "Context window (words)", "min_count": "Min word count",
    "include_names": "Dictionary names in the texts", "include_definitions": "Dictionary definitions in the texts",
    "objectives": "Objectives", "patience": "Patience (epochs)", "negatives": "In-batch negatives",
    "threads": "CPU threads", "max_minutes": "Time budget (minutes)", "epoch_names": "Anchors per epoch",
    "dev_share": "Held-out share (early stopping)", "log_every": "Log every (steps)",
    "fasttext_dim": "fastText dimension (own vectors)", "fasttext_epochs": "fastText epochs (own vectors)",
    "level": "Level", "hierarchy": "Hierarchy of", "top": "Hierarchy top", "margin": "Triplet margin",
    "alpha": "Weight α (synonyms)", "beta": "Weight β (grounding)", "gamma": "Weight γ (context)",
    "max_epochs": "Max epochs", "pool_size": "Negative pool size", "candidates": "Negative candidates",
    "validation_names": "Validation names",
    # Mention tagger
    "mention_types": "Mention types", "stride": "Stride (tokens)", "warmup": "Warm-up",
    "max_documents": "Training documents",
}
# The rows shown first, per method; the rest go under "every parameter".
MAIN: dict[str, tuple[str, ...]] = {
    BIOSYN: ("train_scope", "epochs", "lr", "topk", "dense_ratio", "batch_size", "max_length", "skip_pretrain",
             "pretrain_epochs", "pretrain_max_pairs", "max_queries", "device"),
    LATTE: ("base_index", "epochs", "lr", "batch_size", "latent_types", "top_k", "known_type_weight", "window_words",
            "folds", "max_mentions", "device"),
    HIPRBERT: ("dictionaries", "train_scope", "epochs", "max_batches", "batch_size", "lr", "distances",
               "holdout_share", "device"),
    FASTTEXT: ("dim", "epochs", "window", "min_count", "include_names", "include_definitions"),
    BNE: ("objectives", "epochs", "patience", "max_minutes", "batch_size", "lr", "negatives", "fasttext_dim",
          "fasttext_epochs", "include_definitions", "device"),
    DAN: ("level", "hierarchy", "max_epochs", "patience", "max_minutes", "batch_size", "lr", "margin",
          "fasttext_dim", "fasttext_epochs", "include_definitions", "device"),
    TAGGER: ("mention_types", "epochs", "lr", "batch_size", "max_length", "stride", "max_documents", "device"),
}
HIDDEN = {"method", "step_delay_s"}  # step_delay_s is shown only when set (a test's slowed run)
ZERO_MEANS_ALL = {"max_queries", "max_mentions", "pretrain_max_pairs", "epoch_names", "max_documents"}
OBJECTIVES = {"syn": "synonyms", "def": "concept (mean of its names)", "ctx": "context (own word vectors)"}


@dataclass(frozen=True)
class ParamRow:
    name: str  # the params key (the API's and the command's name)
    label: str
    value: str
    default: bool  # the method's default (or the scope's)
    note: str = ""  # where a default comes from, what a value means
    main: bool = True


def run_scope(params: dict[str, Any], device: str) -> str | None:
    """The scope a BioSyn or HiPrBERT run trains (or trained) at: its ``train_scope``, "auto" resolved by the
    device its worker recorded; None while that is unknown (an "auto" run not started yet)."""
    scope = str(params.get("train_scope", "auto"))
    if scope != "auto":
        return scope
    return resolve_scope("auto", device) if device else None


def _number(value: float) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if 0 < abs(value) < 1e-3:  # learning rates read as 1e-4, 2e-5 whatever their size (":g" writes 1e-4 as 0.0001)
        mantissa, exponent = f"{value:.6e}".split("e")
        return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"
    text = f"{value:g}"
    return text.replace("e-0", "e-").replace("e+0", "e+")


def _show(name: str, value: Any, names: dict[str, dict[int, str]]) -> str:
    if name == "skip_pretrain":
        return "skipped" if value else "yes, before BioSyn"
    if name == "device":
        return value or "auto: the worker's GPU if it has one, else its CPU"
    if name == "train_scope":
        return "auto: full on a GPU, student on a CPU" if value == "auto" else SCOPE_LABELS.get(value, str(value))
    if name == "base_index":
        return f"index {value}" if value else "the active index when queued"
    if name == "dictionaries":
        return ", ".join(names["dictionary"].get(i, f"#{i}") for i in value) or "the run's dictionary"
    if name == "hierarchy":
        return names["dictionary"].get(value, f"#{value}") if value else "the run's dictionary"
    if name == "mention_types":
        return ", ".join(value) if value else "all types"
    if name == "warmup" and isinstance(value, (int, float)):
        return f"{value:.0%} of the steps"
    if name == "objectives":
        return ", ".join(OBJECTIVES.get(o, o) for o in value) or "none"
    if name == "holdout_share" or name == "dev_share":
        return f"{value:.0%}" if value else "none"
    if name == "max_minutes":
        return _number(value) if value else "none"
    if name == "level" and value == 0:
        return "0 (synonym sets: linking)"
    if name in ZERO_MEANS_ALL and not value:
        return ALL
    if value is None:
        return "—"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    if isinstance(value, (int, float)):
        return _number(value)
    return str(value)


def _scoped(method: str, params: dict[str, Any], scope: str | None) -> dict[str, tuple[Any, str]]:
    """The scope-dependent params left to the scope: name -> (the value it trains with, or None while the
    scope is unknown; the note saying where it comes from)."""
    out: dict[str, tuple[Any, str]] = {}
    if method == BIOSYN:
        resolved = resolved_params(params, scope) if scope else {}
        for name in SCOPE_DEPENDENT:
            if params.get(name):
                continue
            if scope:
                out[name] = (resolved[name], f"the {scope} scope's default")
            else:
                gpu, cpu = SCOPE_DEFAULTS["full"], SCOPE_DEFAULTS["student"]
                out[name] = (None, f"the scope's default: {_show(name, getattr(gpu, name), {})} on a GPU (full), "
                                   f"{_show(name, getattr(cpu, name), {})} on a CPU (student)")
    elif method == HIPRBERT:
        for name in HIPRBERT_SCOPE_DEPENDENT:
            if params.get(name) is not None:
                continue
            if scope in ("full", "student"):
                out[name] = (scope_defaults(scope)[name], f"the {scope} scope's default")
            else:
                gpu, cpu = scope_defaults("full"), scope_defaults("student")
                out[name] = (None, f"the scope's default: {gpu[name] or ALL} on a GPU (full), {cpu[name] or ALL} "
                                   f"on a CPU (student)")
    return out


PRETRAIN_DETAILS = ("pretrain_epochs", "pretrain_max_pairs")


def parameter_rows(method: str, params: dict[str, Any], device: str = "",
                   names: dict[str, dict[int, str]] | None = None, hierarchy_base: bool = False) -> list[ParamRow]:
    """Every parameter of a run of ``method`` as a row: the main ones first (in :data:`MAIN`'s order), then the
    rest alphabetically. ``device``: what the worker recorded ("" before it started); ``names``: labels of ids
    ({"dictionary": {id: slug}}); ``hierarchy_base``: a BioSyn run starts from a base encoder made by hierarchy
    pre-training, which skips BioSyn's synonym pre-training whatever ``skip_pretrain`` says (the base has
    learnt the synonyms over far more pairs), so the rows say so instead of the pre-training's settings."""
    names = names or {"dictionary": {}}
    defaults = default_params(method)
    scope = run_scope(params, device) if method in (BIOSYN, HIPRBERT) else None
    scoped = _scoped(method, params, scope)
    main = MAIN.get(method, ())
    ordered = [k for k in main if k in params] + sorted(k for k in params if k not in main)
    rows = []
    for name in ordered:
        value = params[name]
        if name in HIDDEN and not (name == "step_delay_s" and value):
            continue
        label = LABELS.get(name, name.replace("_", " ").capitalize())
        if method == BIOSYN and hierarchy_base and name == "skip_pretrain":
            rows.append(ParamRow(name, label, "skipped", not value, "the base encoder comes from hierarchy pre-training",
                                 name in main))
            continue
        if method == BIOSYN and hierarchy_base and name in PRETRAIN_DETAILS:
            rows.append(ParamRow(name, label, "—", not value, "not used: synonym pre-training is skipped", name in main))
            continue
        if name in scoped:
            resolved, note = scoped[name]
            shown = "the scope's default" if resolved is None else _show(name, resolved, names)
            rows.append(ParamRow(name, label, shown, True, note, name in main))
            continue
        shown, note = _show(name, value, names), ""
        if name == "train_scope" and value == "auto" and scope:
            shown, note = SCOPE_LABELS.get(scope, scope), f"auto: chosen for a {'CPU' if device == 'cpu' else 'GPU'}"
        default = name in defaults and value == defaults[name]
        rows.append(ParamRow(name, label, shown, default, note, name in main))
    return rows
