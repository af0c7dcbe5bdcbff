"""A background job as ``GET /api/jobs/<id>/`` shows it (:class:`Job`), an upload's import report
(:class:`ImportReport`), and the progress line :meth:`Client.wait <elwb_client.Client.wait>` prints by default
(:class:`ProgressPrinter`)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, TextIO

TERMINAL_STATES = ("succeeded", "failed", "cancelled")


@dataclass(frozen=True)
class Job:
    """One job: an import, a corpus run, a training run, ... ``total`` is the server's ``progress_total`` (None or 0
    while unknown); ``rate`` is units a second, ``seconds_left`` the time left at that pace (None where unknown).
    ``data`` is the whole JSON answer, for the fields not named here."""

    id: int
    kind: str
    state: str
    progress: int = 0
    total: int | None = None
    percent: int | None = None
    rate: float | None = None
    seconds_left: float | None = None
    progress_note: str = ""
    error: str = ""
    note: str = ""
    label: str = ""
    subject: str = ""
    result: Any = None
    data: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Job:
        """A job from the API's JSON (``/api/jobs/<id>/``, or the 201 of ``POST /api/corpus-runs/``)."""
        return cls(
            id=int(data["id"]), kind=str(data.get("kind") or ""), state=str(data.get("state") or ""),
            progress=int(data.get("progress") or 0), total=data.get("progress_total"), percent=data.get("percent"),
            rate=data.get("rate"), seconds_left=data.get("seconds_left"),
            progress_note=str(data.get("progress_note") or ""), error=str(data.get("error") or ""),
            note=str(data.get("note") or ""), label=str(data.get("label") or ""),
            subject=str(data.get("subject") or ""), result=data.get("result"), data=data,
        )

    @property
    def finished(self) -> bool:
        """Whether it has ended: succeeded, failed or cancelled."""
        return self.state in TERMINAL_STATES

    @property
    def succeeded(self) -> bool:
        return self.state == "succeeded"

    def describe(self) -> str:
        """``Corpus run 12 (notes)``: its kind, id and subject."""
        subject = f" ({self.subject})" if self.subject else ""
        return f"{self.label or self.kind or 'job'} {self.id}{subject}"

    def progress_text(self) -> str:
        """``12/40 (30%), 3.2/s, about 9 s left``: what is known of its progress, in a few words."""
        done = f"{self.progress}/{self.total}" if self.total else str(self.progress)
        parts = [done + (f" ({self.percent}%)" if self.percent is not None else "")]
        if self.rate:
            parts.append(f"{self.rate:.3g}/s")
        if self.seconds_left is not None:
            parts.append(f"about {_duration(self.seconds_left)} left")
        if self.progress_note:
            parts.append(self.progress_note)
        return ", ".join(parts)


@dataclass(frozen=True)
class ImportReport:
    """What ``POST /api/collections/<slug>/upload/`` imported: counts, the importer's warnings and its summary.
    ``created`` is False when the file added nothing new (every document already there)."""

    collection: str
    documents: int
    skipped_documents: int
    mentions: int
    links: int
    warnings: list[str]
    message: str
    created: bool
    data: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: dict[str, Any], created: bool) -> ImportReport:
        return cls(
            collection=str(data.get("collection") or ""), documents=int(data.get("documents") or 0),
            skipped_documents=int(data.get("skipped_documents") or 0), mentions=int(data.get("mentions") or 0),
            links=int(data.get("links") or 0), warnings=[str(w) for w in data.get("warnings") or []],
            message=str(data.get("message") or ""), created=created, data=data,
        )


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class ProgressPrinter:
    """A tqdm-like progress line on ``stream`` (stderr by default): rewritten in place on a terminal, one line per
    change otherwise (a log file then reads as a history). Call it with each :class:`Job` seen; :meth:`close` ends
    the line."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.inline = bool(getattr(self.stream, "isatty", lambda: False)())
        self._last = ""
        self._width = 0

    def __call__(self, job: Job) -> None:
        line = f"{job.describe()}: {job.state}, {job.progress_text()}"
        if line == self._last:
            return
        self._last = line
        if self.inline:
            self.stream.write("\r" + line.ljust(self._width))
            self._width = max(self._width, len(line))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.inline and self._last:
            self.stream.write("\n")
            self.stream.flush()
