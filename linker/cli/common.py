"""What every sub-command shares: reading its input files, its --mention-types, and its progress log."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from linker.data import PubTatorDocument, iter_pubtator, iter_texts
from linker.methods.base import TrainingCallbacks

__all__ = ["read_docs", "read_texts", "parse_types", "log_to", "logged_callbacks", "DEVICE_HELP"]


def read_docs(paths: Sequence[str | Path]) -> list[PubTatorDocument]:
    return [doc for p in paths for doc in iter_pubtator(p)]


def read_texts(paths: Sequence[str | Path]) -> list[str]:
    return [text for p in paths for text in iter_texts(p)]


def parse_types(value: str | None) -> set[str] | None:
    """``--mention-types Disease,Chemical`` -> {"Disease", "Chemical"}; None when not given."""
    return {t.strip() for t in value.split(",") if t.strip()} if value else None


def log_to(path: str | Path | None) -> Any:
    """A progress callback printing one JSON line to stderr and, if given, appending it to ``path`` (its
    folder made now: ``--log OUT/progress.jsonl`` before OUT exists)."""
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)

    def callback(progress: dict[str, Any]) -> None:
        line = json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%S"), **progress})
        print(line, file=sys.stderr, flush=True)
        if path:
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(line + "\n")

    return callback


def logged_callbacks(log_file: str | Path | None) -> TrainingCallbacks:
    """A training run's callbacks for the command line: steps, epochs, phases and log lines as JSON lines
    (:func:`log_to`)."""
    log = log_to(log_file)
    return TrainingCallbacks(on_step=log, on_epoch_end=log, on_phase=lambda name: log({"phase": name}),
                             on_log=lambda line: log({"log": line}))


DEVICE_HELP = "cpu, cuda, cuda:1 ... (default: LINKER_DEVICE, else cuda if there is one)"
