"""Named API tokens: a user's keys for pipelines, each with its own expiry, scope and revocation.

The key itself is never stored: only its SHA-256 (keys are long random strings, so a fast hash is enough) and its
first characters, which the tokens page shows so a user can tell their tokens apart.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, help_text="What the token is for, e.g. the pipeline that uses it.")
    key_hash = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the key, in hex.")
    prefix = models.CharField(max_length=16, help_text="The key's first characters, shown to tell tokens apart.")
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Empty: the token does not expire.")
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    read_only = models.BooleanField(default=False, help_text="Refused (403) on POST, PUT, PATCH and DELETE.")
    # Deleting the project deletes its tokens: a scoped token must never outlive its scope and see everything.
    project = models.ForeignKey("projects.Project", null=True, blank=True, on_delete=models.CASCADE,
                                related_name="api_tokens", help_text="Only this project's data, when set.")

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…) of {self.user}"

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()

    @property
    def state(self) -> str:
        """active, expired or revoked: what the tokens page shows."""
        if self.revoked_at is not None:
            return "revoked"
        return "expired" if self.is_expired else "active"
