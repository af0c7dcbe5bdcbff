"""The audit log as JSON Lines: one event a line, every field of it, oldest first; and the same read back.

The export is streamed (``QuerySet.iterator``): a year of events is never held in memory. Reading a line back
(:func:`read_event`) gives the event's fields with their types (``at`` a datetime), so that a round trip compares
equal with the rows (tests/integration/test_audit_log.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from webapp.audit.models import AuditEvent

FIELDS = ("id", "at", "actor_id", "actor_name", "action", "object_type", "object_id", "object_label", "before",
          "after", "link", "address")
CHUNK = 2000


def event_record(event: AuditEvent) -> dict[str, Any]:
    """One event as its JSON object."""
    out = {name: getattr(event, name) for name in FIELDS}
    out["at"] = event.at.isoformat()
    return out


def jsonl_lines(events: QuerySet[AuditEvent]) -> Iterator[str]:
    """The events oldest first, one JSON object and a newline each."""
    for event in events.order_by("at", "pk").iterator(chunk_size=CHUNK):
        yield json.dumps(event_record(event), ensure_ascii=False, sort_keys=True) + "\n"


def read_event(line: str) -> dict[str, Any]:
    """One line of an export back as the event's fields; a ValueError names what is wrong with the line."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not a JSON line of the audit export: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"not an event of the audit export: a {type(data).__name__}, not an object")
    missing = [name for name in FIELDS if name not in data]
    if missing:
        raise ValueError(f"not an event of the audit export: it lacks {', '.join(missing)}")
    data["at"] = datetime.fromisoformat(data["at"])
    return {name: data[name] for name in FIELDS}


def read_jsonl(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """Every event of an export (blank lines skipped)."""
    for line in lines:
        if line.strip():
            yield read_event(line)
