"""Which account of the identity provider is which workbench user."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Identity(models.Model):
    """A provider's account (its issuer and the ``sub`` claim, which never changes, unlike a name or an e-mail
    address) bound to a user. Found by these, a user who renames themselves at the provider stays the same user."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identities")
    issuer = models.CharField(max_length=500)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)
    last_login_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="one_user_per_provider_account")]
        verbose_name_plural = "identities"

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"
