"""A training run's phases and time left on its page (issue #46)."""

from __future__ import annotations

from webapp.training.models import TrainingRun
from webapp.training.run_phases import planned, run_phases, time_left


def _run(**fields) -> TrainingRun:  # type: ignore[no-untyped-def]
    return TrainingRun(**({"method": "biosyn", "state": "running", "params": {}} | fields))


def test_a_biosyn_run_plans_pretraining_training_index_and_evaluation() -> None:
    assert planned(_run(eval_collection_id=3)) == ["snapshot", "synonym-pretrain", "biosyn", "index", "evaluate"]
    assert planned(_run(params={"skip_pretrain": True})) == ["snapshot", "biosyn", "index"]
    assert planned(_run(method="tagger")) == ["snapshot", "examples", "train", "save"]
    assert planned(_run(method="bne")) == ["snapshot", "word-vectors", "bne", "index"]


def test_states_follow_the_current_phase_and_its_note_gives_the_time_left() -> None:
    run = _run(phase="biosyn", eval_collection_id=3, progress_note="biosyn epoch 2/4, about 12 min 31 s left")
    phases = run_phases(run)
    assert [(p.name, p.state) for p in phases] == [
        ("snapshot", "done"), ("synonym-pretrain", "done"), ("biosyn", "running"), ("index", "waiting"), ("evaluate", "waiting")]
    assert time_left(phases) == "12 min 31 s"


def test_a_failed_run_stops_where_it_was_and_a_queued_one_waits() -> None:
    failed = run_phases(_run(state="failed", phase="index"))
    assert [p.state for p in failed] == ["done", "done", "done", "stopped"] and time_left(failed) == ""
    assert {p.state for p in run_phases(_run(state="queued"))} == {"waiting"}
    succeeded = run_phases(_run(state="succeeded", phase="done"))
    assert {p.state for p in succeeded} == {"done"} and "done" not in [p.name for p in succeeded]


def test_a_phase_outside_the_plan_is_listed_too() -> None:
    # A LATTE run without a base artifact builds its base index first.
    assert [p.name for p in run_phases(_run(method="latte", phase="index"))][:3] == ["snapshot", "index", "candidates"]
