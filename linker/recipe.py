"""Training recipes: ``train(method, inputs, config, callbacks) -> (artifact folder, report)``.

``python -m linker train`` and the web app's training runs both call :func:`train` and nothing else for the
ML; they differ only in how they gather the inputs (files, or a run's snapshot of the database).

The table: :data:`METHODS` maps a name to a :class:`~linker.methods.base.Method` (its label, the dataclass of
its parameters with their help text, its config and train function, what it makes); :func:`register` adds one.
BioSyn, LATTE, HiPrBERT, fastText word vectors, BNE, DAN and the mention tagger are registered here, in the order
a person is offered them; a new method is a module under ``linker/methods/`` and one ``register`` line below. The
web app's start form, API and run page read the table: a method needs nothing there for its parameters.

The concept prior has one definition (:func:`~linker.methods.base.prior_counts`): the number of training
mentions annotated with each concept, every gold mention counting (repeats included) and each curated
mention counting once more; the retriever scores ``prior_weight * log(1 + n)``.

Publishing: the method writes into ``<out>.partial``; :func:`train` adds ``training_report.json``, removes
the checkpoints and renames the folder to ``out``, so the artifact appears complete or not at all (a
failed or cancelled training leaves neither folder).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from linker.methods.base import Method, Report, RunContext, TrainingCallbacks, TrainingInputs, prior_counts
from linker.methods.biosyn import BIOSYN, HISTORIES, BioSynRecipeConfig
from linker.methods.bne import BNE, BNERecipeConfig
from linker.methods.dan import DAN, DANRecipeConfig
from linker.methods.hiprbert import HIPRBERT
from linker.methods.hiprbert_params import HiPrBERTRecipeConfig
from linker.methods.latte import LATTE, LatteRecipeConfig
from linker.methods.tagger import TAGGER, TaggerRecipeConfig
from linker.methods.word_vectors import FASTTEXT, FastTextRecipeConfig

__all__ = [
    "METHODS", "Method", "Report", "TrainingCallbacks", "TrainingInputs", "BioSynRecipeConfig", "HISTORIES",
    "LatteRecipeConfig", "HiPrBERTRecipeConfig", "FastTextRecipeConfig", "DANRecipeConfig", "BNERecipeConfig",
    "TaggerRecipeConfig", "RunContext", "get_method", "prior_counts", "register", "unregister", "train",
]

METHODS: dict[str, Method[Any]] = {}


def register(method: Method[Any]) -> Method[Any]:
    """Add a method to the table; a name is registered once."""
    if method.name in METHODS:
        raise ValueError(f"training method {method.name!r} is already registered")
    METHODS[method.name] = method
    return method


def unregister(name: str) -> None:
    """Take a method out of the table (a test's own method, once the test is done)."""
    METHODS.pop(name, None)


register(BIOSYN)
register(LATTE)
register(HIPRBERT)
register(FASTTEXT)
register(BNE)
register(DAN)
register(TAGGER)


def get_method(name: str) -> Method[Any]:
    try:
        return METHODS[name]
    except KeyError:
        raise ValueError(f"unknown training method {name!r}; known: {', '.join(sorted(METHODS))}") from None


def train(
    method: str, inputs: TrainingInputs, config: Any = None, callbacks: TrainingCallbacks | None = None
) -> tuple[Path, Report]:
    """Train ``method`` on ``inputs`` into the artifact folder ``inputs.out``; returns it and the report.

    ``config`` is an instance of the method's config class (``None``: its defaults). An existing ``out``
    is replaced only when it is empty or an earlier artifact (it has a config.json)."""
    entry = get_method(method)
    config = entry.config_class() if config is None else config
    if not isinstance(config, entry.config_class):
        raise TypeError(f"{method} takes a {entry.config_class.__name__}, not a {type(config).__name__}")
    out = Path(inputs.out)
    _check_replaceable(out)
    present = set(out.iterdir()) if out.is_dir() else set()
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        report: Report = {"method": entry.name} | entry.train(inputs, config, callbacks or TrainingCallbacks(), partial)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    _publish(partial, out, report, present)
    return out, report


def _check_replaceable(out: Path, kept: Path | None = None) -> None:
    if out.exists() and any(out.iterdir()) and not (out / "config.json").exists():
        where = f"; the trained artifact is kept at {kept}" if kept is not None else ""
        raise FileExistsError(f"{out} exists and is not a linker artifact: refusing to replace it{where}")


def _publish(partial: Path, out: Path, report: Report, present: set[Path]) -> None:
    """Replace ``out`` by the finished artifact in ``partial``.

    What appeared in ``out`` while the method trained (``present``: its entries at the start) is the run's
    own: a progress log given as ``--log OUT/progress.jsonl``. It moves into the artifact rather than making
    ``out`` look like a folder of someone else's (which, refused, used to cost the whole training). Should
    ``out`` still be refused, the trained artifact stays in ``partial`` and the error says so."""
    shutil.rmtree(partial / "checkpoints", ignore_errors=True)
    (partial / "training_report.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    if out.is_dir():
        for entry in sorted(set(out.iterdir()) - present):
            target = partial / entry.name
            entry.rename(target if not target.exists() else partial / f"{entry.name}.during-training")
    _check_replaceable(out, kept=partial)
    shutil.rmtree(out, ignore_errors=True)
    partial.rename(out)
