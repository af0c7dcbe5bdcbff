"""A training run's plan: its phases in order, each one's state, and the time left where the phases report it.

The recipes (linker.methods) announce their phases as they reach them (Reporter.phase); which phases a run goes
through follows from its method and parameters, so the page can list them before they start: an admin sees
"pre-training → BioSyn → index → evaluation" and which one is under way."""

from __future__ import annotations

import re
from dataclasses import dataclass

from webapp.training.models import TrainingRun

LABELS = {
    "snapshot": "Training data", "synonym-pretrain": "Synonym pre-training", "biosyn": "BioSyn training",
    "word-vectors": "Word vectors", "bne": "BNE training", "dan": "DAN training", "hierarchy-pretrain":
    "Hierarchy pre-training", "candidates": "Candidates", "latte": "LATTE training", "latent-types": "Latent types",
    "examples": "Examples", "train": "Tagger training", "save": "Saving", "index": "Index build",
    "evaluate": "Evaluation",
}
FINISHED = "done"  # the phase a succeeded run is left in (TrainingRun.finish)
_LEFT = re.compile(r"about (.+?) left")


@dataclass(frozen=True)
class Phase:
    name: str
    label: str
    state: str  # done, running, waiting, stopped (the run ended in it or before it)
    note: str = ""  # the running phase's progress in words, with its time left when it reports one


def planned(run: TrainingRun) -> list[str]:
    """The phases the run goes through, in order (phases that depend on its parameters only when they apply);
    every run starts with its snapshot (TrainingRun.start)."""
    return ["snapshot", *_method_phases(run)]


def _method_phases(run: TrainingRun) -> list[str]:
    params, evaluates = run.params or {}, run.eval_collection_id is not None
    method = run.method
    if method == TrainingRun.Method.BIOSYN:
        steps = ([] if params.get("skip_pretrain") else ["synonym-pretrain"]) + ["biosyn", "index"]
    elif method in TrainingRun.WORD_VECTOR_ENCODERS:
        steps = ["word-vectors", method, "index"]
    elif method == TrainingRun.Method.LATTE:
        steps = ["candidates", "latte", "latent-types"]
    elif method == TrainingRun.Method.HIPRBERT:
        steps = ["hierarchy-pretrain"]
    elif method == TrainingRun.Method.TAGGER:
        return ["examples", "train", "save"]
    elif method == TrainingRun.Method.FASTTEXT:
        return ["word-vectors"]
    else:
        steps = [method, "index"]
    return steps + (["evaluate"] if evaluates else [])


def run_phases(run: TrainingRun) -> list[Phase]:
    """The plan with each phase's state; a phase the run reached that the plan lacks (a LATTE base index built
    first) is put before the one that follows it."""
    names = planned(run)
    current = "" if run.phase == FINISHED else run.phase
    if current and current not in names:
        names.insert(1, current)
    at = names.index(current) if current in names else (-1 if run.state == TrainingRun.State.QUEUED else len(names))
    succeeded = run.state == TrainingRun.State.SUCCEEDED
    phases = []
    for i, name in enumerate(names):
        if succeeded or i < at:
            state, note = "done", ""
        elif i == at and run.state == TrainingRun.State.RUNNING:
            state, note = "running", run.progress_note
        elif run.is_finished:
            state, note = "stopped", ""
        else:
            state, note = "waiting", ""
        phases.append(Phase(name, LABELS.get(name, name), state, note))
    return phases


def time_left(phases: list[Phase]) -> str:
    """The running phase's time left, as its note says it ("about 5 min 51 s left"); empty when it says none."""
    for p in phases:
        if p.state == "running":
            found = _LEFT.search(p.note)
            return found.group(1) if found else ""
    return ""
