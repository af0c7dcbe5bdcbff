"""One row per write: append-only (a database trigger refuses UPDATE; rows go only by the retention sweep)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class AuditEvent(models.Model):
    at = models.DateTimeField(default=timezone.now, db_index=True)
    # The actor as a foreign key (for filters) and by name (kept when the account is deleted); "" for the system.
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="+")
    actor_name = models.CharField(max_length=150, blank=True)
    # What happened, as "<object kind>.<verb>": "decision.made", "import.started", "token.revoked", "login.failed" ...
    action = models.CharField(max_length=64, db_index=True)
    object_type = models.CharField(max_length=64, blank=True)
    object_id = models.CharField(max_length=64, blank=True)
    object_label = models.CharField(max_length=255, blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    # Where the change is told in full (a decision's page in the curation log), rather than copying it here.
    link = models.CharField(max_length=300, blank=True)
    address = models.GenericIPAddressField(null=True, blank=True)

    class Meta:
        ordering = ("-at", "-pk")
        indexes = [models.Index(fields=("object_type", "object_id"))]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_name or 'system'} {self.action} {self.object_label}"
