"""Which events the audit page, its JSONL export and ``manage.py audit_export`` show: one set of filters."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

from django import forms
from django.db.models import Q, QuerySet
from django.utils import timezone

from webapp.audit.actions import ACTIONS
from webapp.audit.models import AuditEvent

SYSTEM = "system"  # the actor filter's name for events no person made (a worker, the learning loop, a failed login)


class AuditFilterForm(forms.Form):
    actor = forms.CharField(required=False, max_length=150, help_text=f"A username, or “{SYSTEM}”.")
    action = forms.CharField(required=False, max_length=64,
                             help_text="An action (decision.made), or a kind of them (decision).")
    object_type = forms.CharField(required=False, max_length=64)
    object_id = forms.CharField(required=False, max_length=64)
    date_from = forms.DateField(required=False, help_text="From this day (inclusive).")
    date_to = forms.DateField(required=False, help_text="To this day (inclusive).")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        start, end = data.get("date_from"), data.get("date_to")
        if start and end and start > end:
            raise forms.ValidationError(f"the date from ({start}) is after the date to ({end})")
        return data


@dataclass(frozen=True)
class AuditFilter:
    actor: str = ""
    action: str = ""
    object_type: str = ""
    object_id: str = ""
    date_from: date | None = None
    date_to: date | None = None

    @classmethod
    def of(cls, data: dict[str, Any]) -> AuditFilter:
        """From a valid :class:`AuditFilterForm`'s cleaned data (or options of the same names)."""
        return cls(actor=data.get("actor") or "", action=data.get("action") or "",
                   object_type=data.get("object_type") or "", object_id=data.get("object_id") or "",
                   date_from=data.get("date_from"), date_to=data.get("date_to"))

    @staticmethod
    def problems(form: forms.Form) -> str:
        """A form's errors in one line ("date_from: Enter a valid date.")."""
        return "; ".join(f"{name}: {' '.join(str(e) for e in errors)}" for name, errors in form.errors.items())

    def query(self) -> dict[str, str]:
        """The filters as GET parameters (the export link and the pages keep them)."""
        return {name: str(value) for name, value in vars(self).items() if value}


def _start_of(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


def events(f: AuditFilter, found: QuerySet[AuditEvent] | None = None) -> QuerySet[AuditEvent]:
    """The events (of ``found``, default all) the filter lets through, newest first."""
    found = AuditEvent.objects.all() if found is None else found
    if f.actor:
        found = found.filter(actor_name="") if f.actor == SYSTEM else found.filter(actor_name__iexact=f.actor)
    if f.action:
        # An action ("decision.made", "logout"), or a kind of them ("decision": made and undone).
        found = found.filter(Q(action=f.action) | Q(action__startswith=f"{f.action}."))
    if f.object_type:
        found = found.filter(object_type=f.object_type)
    if f.object_id:
        found = found.filter(object_id=f.object_id)
    if f.date_from:
        found = found.filter(at__gte=_start_of(f.date_from))
    if f.date_to:
        found = found.filter(at__lt=_start_of(f.date_to + timedelta(days=1)))
    return found.order_by("-at", "-pk")


def action_choices() -> list[str]:
    """The actions the filter offers: every known one, and any other the log holds (an older name)."""
    held = set(AuditEvent.objects.values_list("action", flat=True).distinct())
    return list(ACTIONS) + sorted(held - set(ACTIONS))


def object_types() -> list[str]:
    return sorted(t for t in AuditEvent.objects.values_list("object_type", flat=True).distinct() if t)
