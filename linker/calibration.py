"""How far to trust a linker's top-1: a calibrated probability that it is right, and when to say "no concept".

A linker's score (S = dense + λ·sparse, or the re-ranker's r) ranks candidates but is no probability: its
scale differs between encoders and dictionaries. :class:`Calibration` is Platt scaling (Platt 1999) on a few
features of a part's ranked candidates (the top-1 score, its margin over the next concept, the dense and
sparse similarities of its matched name, whether that name is the query itself), fitted by logistic regression
on mentions whose answer is known: gold mentions of a held-out collection (label: top-1 right) and the
mentions curators marked NIL (label: wrong, whatever the linker put first). A composite mention is right only
if every part is, so its confidence is the product of its parts'.

``nil_threshold`` is where the linker says "no concept": below it the top-1 is more likely wrong than a NIL
decision is. It is chosen on the fitting data when NIL examples are among it (the threshold that makes the
most right calls, counting a NIL example below the threshold as a right NIL), and 0 otherwise (never NIL).

One file, ``calibration.json``, in the linker's artifact folder (:meth:`save`, :meth:`load`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # linker.retrieval imports faiss and torch; calibration reads candidates only (issue #45)
    from linker.retrieval import Candidate

__all__ = ["Calibration", "CalibrationExample", "FEATURES", "part_features", "fit_calibration", "FILE_NAME",
           "labelled_examples", "nil_examples", "mention_confidence", "reliability", "precision_above"]

Normalize = Callable[[str], str]

FILE_NAME = "calibration.json"
FEATURES = ("top1_score", "margin", "dense", "sparse", "exact_name")


def part_features(query: str, candidates: Sequence[Candidate], normalize: Normalize | None = None) -> list[float]:
    """The calibration features of one part's ranked candidates (best first) for its normalised ``query``.

    ``margin`` is the top-1 score minus the best score of another concept (0 with no other); ``exact_name``
    is 1 when the matched name, normalised by ``normalize`` (a ``str -> str`` callable; default: lower-case),
    is the query. No candidate: every feature 0 (the probability is then the calibration's floor).
    """
    if not candidates:
        return [0.0] * len(FEATURES)
    top = candidates[0]
    other = next((c.score for c in candidates[1:] if c.concept_id != top.concept_id), None)
    margin = float(top.score - other) if other is not None else 0.0
    exact = 1.0 if (normalize or str.lower)(top.name) == query else 0.0
    return [float(top.score), margin, _finite(top.dense), _finite(top.sparse), exact]


def _finite(x: float) -> float:
    return float(x) if x is not None and math.isfinite(x) else 0.0


@dataclass(frozen=True)
class CalibrationExample:
    """One part's features with its label: whether the top-1 was right (a NIL example is never right)."""

    features: tuple[float, ...]
    right: bool
    nil: bool = False


@dataclass(frozen=True)
class Calibration:
    """P(top-1 right) = σ(w·standardised features + b), with the NIL threshold and what it was fitted on."""

    weights: tuple[float, ...]
    bias: float
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    nil_threshold: float = 0.0
    fitted_on: dict[str, int] = field(default_factory=dict)  # examples, right, nil
    features: tuple[str, ...] = FEATURES
    # Whose scores the examples carried: "retriever" or "latte" (the linker's ranked_by); "" before it was recorded.
    scored_by: str = ""

    def probability(self, features: Sequence[float]) -> float:
        x = (np.asarray(features, dtype=np.float64) - np.asarray(self.mean)) / np.asarray(self.scale)
        z = float(np.dot(np.asarray(self.weights), x) + self.bias)
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))

    def confidence(self, parts: Sequence[tuple[str, Sequence[Candidate]]], normalize: Normalize | None = None) -> float:
        """A mention's confidence: the product over its parts (query, ranked candidates) of P(top-1 right)."""
        p = 1.0
        for query, candidates in parts:
            p *= self.probability(part_features(query, candidates, normalize))
        return p

    def says_nil(self, confidence: float) -> bool:
        return confidence < self.nil_threshold

    def save(self, folder: str | Path) -> None:
        payload = asdict(self)
        (Path(folder) / FILE_NAME).write_text(json.dumps(payload, indent=2) + "\n")

    @classmethod
    def load(cls, folder: str | Path) -> Calibration | None:
        """The folder's calibration, or None when it has none."""
        path = Path(folder) / FILE_NAME
        if not path.is_file():
            return None
        data = json.loads(path.read_text())
        if tuple(data.get("features", ())) != FEATURES:
            raise ValueError(f"{path}: calibration features {data.get('features')} are not {list(FEATURES)}")
        return cls(weights=tuple(data["weights"]), bias=float(data["bias"]), mean=tuple(data["mean"]),
                   scale=tuple(data["scale"]), nil_threshold=float(data.get("nil_threshold", 0.0)),
                   fitted_on={k: int(v) for k, v in data.get("fitted_on", {}).items()}, features=FEATURES,
                   scored_by=str(data.get("scored_by", "")))


def mention_confidence(parts: Sequence[float | None]) -> float | None:
    """A mention's confidence from its parts': right only if every part's top-1 is (None when a part has none)."""
    if not parts or any(p is None for p in parts):
        return None
    return math.prod(p for p in parts if p is not None)


MIN_EXAMPLES = 20


def labelled_examples(
    queries: Sequence[Sequence[str]], ranked: Sequence[Sequence[Sequence[Candidate]]],
    gold: Sequence[Sequence[Collection[str]]], normalize: Normalize | None = None,
) -> list[CalibrationExample]:
    """One example per part of each gold mention: its features, right when its top-1 is among the part's gold
    ids. ``queries``, ``ranked`` and ``gold`` are per mention, then per part (as
    :meth:`linker.linker.Linker.link_queries` and :class:`linker.protocol.EvalMention` give them)."""
    out = []
    for qs, parts, golds in zip(queries, ranked, gold, strict=True):
        for query, candidates, ids in zip(qs, parts, golds, strict=False):
            right = bool(candidates) and candidates[0].concept_id in ids
            out.append(CalibrationExample(tuple(part_features(query, candidates, normalize)), right))
    return out


def nil_examples(
    queries: Sequence[Sequence[str]], ranked: Sequence[Sequence[Sequence[Candidate]]],
    normalize: Normalize | None = None,
) -> list[CalibrationExample]:
    """One wrong NIL example per part of each mention a curator marked NIL (no concept of the dictionary fits)."""
    return [CalibrationExample(tuple(part_features(q, c, normalize)), right=False, nil=True)
            for qs, parts in zip(queries, ranked, strict=True) for q, c in zip(qs, parts, strict=False)]


def fit_calibration(examples: Sequence[CalibrationExample], regularisation: float = 1.0, scored_by: str = "") -> Calibration:
    """Platt scaling by L2-regularised logistic regression (scikit-learn's lbfgs) on standardised features.

    ``scored_by``: whose scores the examples carry (the linker's ``ranked_by``), kept so that a linker serving
    other scores refuses the calibration (:meth:`linker.linker.Linker.load`).

    Needs at least :data:`MIN_EXAMPLES` examples with both labels among them (a ValueError says what is
    missing): a calibration fitted on one class would call everything certain.
    """
    from sklearn.linear_model import LogisticRegression

    right = sum(1 for e in examples if e.right)
    if len(examples) < MIN_EXAMPLES or right in (0, len(examples)):
        raise ValueError(f"calibration needs at least {MIN_EXAMPLES} examples with right and wrong top-1s among "
                         f"them; got {len(examples)} ({right} right)")
    x = np.asarray([e.features for e in examples], dtype=np.float64)
    y = np.asarray([e.right for e in examples], dtype=np.int64)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0  # a constant feature (e.g. no dense scores) carries no information
    model = LogisticRegression(C=regularisation, max_iter=1000).fit((x - mean) / scale, y)
    calibration = Calibration(
        weights=tuple(float(w) for w in model.coef_[0]), bias=float(model.intercept_[0]),
        mean=tuple(float(m) for m in mean), scale=tuple(float(s) for s in scale),
        fitted_on={"examples": len(examples), "right": right, "nil": sum(1 for e in examples if e.nil)},
        scored_by=scored_by,
    )
    return _with_nil_threshold(calibration, examples)


def _with_nil_threshold(calibration: Calibration, examples: Sequence[CalibrationExample]) -> Calibration:
    """The threshold (among the examples' probabilities) that makes the most right calls: an example above it
    is right when its top-1 is; below it, when it is a NIL example. 0 (never NIL) without NIL examples."""
    if not any(e.nil for e in examples):
        return calibration
    probs = np.asarray([calibration.probability(e.features) for e in examples])
    right = np.asarray([e.right for e in examples])
    nil = np.asarray([e.nil for e in examples])
    best_t, best_calls = 0.0, int(right.sum())  # threshold 0: never NIL
    for t in np.unique(probs):
        above = probs >= t
        calls = int((right & above).sum() + (nil & ~above).sum())
        if calls > best_calls:
            best_t, best_calls = float(t), calls
    return Calibration(calibration.weights, calibration.bias, calibration.mean, calibration.scale,
                       best_t, calibration.fitted_on, calibration.features)


def reliability(probabilities: Sequence[float], right: Sequence[bool], bins: int = 10) -> dict[str, float]:
    """How well probabilities match outcomes: Brier score, expected calibration error over ``bins`` equal-width
    bins, and the examples and share right (a primary metric: ``ece``, lower is better)."""
    p = np.asarray(probabilities, dtype=np.float64)
    y = np.asarray(right, dtype=np.float64)
    if not len(p):
        return {"examples": 0.0}
    which = np.minimum((p * bins).astype(int), bins - 1)
    ece = sum(abs(p[which == b].mean() - y[which == b].mean()) * (which == b).mean()
              for b in range(bins) if (which == b).any())
    return {"examples": float(len(p)), "right": float(y.mean()), "brier": float(((p - y) ** 2).mean()),
            "ece": float(ece)}


def precision_above(probabilities: Sequence[float], right: Sequence[bool], threshold: float) -> dict[str, float]:
    """What auto-accepting every top-1 at or above ``threshold`` would do: the share of mentions accepted and
    the precision of those accepted (1.0 when none is)."""
    p = np.asarray(probabilities, dtype=np.float64)
    y = np.asarray(right, dtype=bool)
    accepted = p >= threshold
    n = int(accepted.sum())
    return {"threshold": float(threshold), "accepted": float(n / len(p)) if len(p) else 0.0,
            "precision": float(y[accepted].mean()) if n else 1.0}
