"""Mention-level precision, recall and F1 of detected spans against gold spans.

Two matching rules, as NER evaluations report them:

- ``exact``: a predicted span is right when a gold span has the same start and end;
- ``overlap``: a predicted span is right when it shares at least one character with a gold span that no other
  predicted span has claimed (a one-to-one matching, greedy left to right, so one long prediction covering two
  gold mentions counts once, not twice).

Documents are compared one by one (offsets are per document); counts are summed over documents (micro-averaged).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["span_counts", "span_prf", "prf"]

Offsets = tuple[int, int]


def span_counts(gold: Iterable[Offsets], predicted: Iterable[Offsets], mode: str = "exact") -> tuple[int, int, int]:
    """(true positives, number predicted, number gold) for one document."""
    g = sorted(set(gold))
    p = sorted(set(predicted))
    if mode == "exact":
        return len(set(g) & set(p)), len(p), len(g)
    if mode != "overlap":
        raise ValueError(f"unknown matching mode {mode!r}; expected 'exact' or 'overlap'")
    claimed: set[int] = set()
    tp = 0
    for ps, pe in p:
        for i, (gs, ge) in enumerate(g):
            if i not in claimed and ps < ge and gs < pe:
                claimed.add(i)
                tp += 1
                break
    return tp, len(p), len(g)


def prf(tp: int, n_predicted: int, n_gold: int) -> dict[str, float]:
    precision = tp / n_predicted if n_predicted else 0.0
    recall = tp / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "tp": tp, "predicted": n_predicted, "gold": n_gold}


def span_prf(gold: Sequence[Iterable[Offsets]], predicted: Sequence[Iterable[Offsets]], mode: str = "exact") -> dict[str, float]:
    """Micro-averaged precision/recall/F1 over documents (``gold[i]`` and ``predicted[i]`` are one document's)."""
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold documents but {len(predicted)} predicted")
    tp = n_pred = n_gold = 0
    for g, p in zip(gold, predicted, strict=True):
        a, b, c = span_counts(g, p, mode)
        tp, n_pred, n_gold = tp + a, n_pred + b, n_gold + c
    return prf(tp, n_pred, n_gold)
