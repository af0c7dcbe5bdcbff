"""The learning loop's settings per dictionary: the promotion gate and the retrain policy (webapp.training.loop)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from webapp.core.public import PublicMessageField
from webapp.training.models.runs import TrainingRun
from webapp.vocab.models import Dictionary


class PromotionGate(models.Model):
    """What a trained index must reach on a frozen gold collection before it may serve its dictionary.

    Measured against the active index on the same collection and mentions: overall Acc@1 may not drop by
    more than ``max_acc1_drop`` and, for every mention type with at least ``min_type_mentions`` mentions, the
    type's Acc@1 by more than ``max_type_drop`` (both fractions: 0.01 is one point). ``auto_promote``: a run
    that passes is promoted without an admin (webapp.training.loop).
    """

    dictionary = models.OneToOneField(Dictionary, on_delete=models.CASCADE, related_name="promotion_gate")
    collection = models.ForeignKey(
        "corpus.Collection", on_delete=models.PROTECT, related_name="+",
        help_text="The frozen gold collection every candidate is measured on (never trained on).",
    )
    max_acc1_drop = models.FloatField(default=0.0, help_text="Largest drop of Acc@1 allowed (0.01 = one point).")
    max_type_drop = models.FloatField(null=True, blank=True, help_text="Largest drop of any mention type's Acc@1; empty: not checked.")
    min_type_mentions = models.PositiveIntegerField(default=20, help_text="Types with fewer gold mentions are not gated (too noisy).")
    auto_promote = models.BooleanField(default=False, help_text="Promote a run that passes without waiting for an admin.")
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"promotion gate of {self.dictionary.slug}"


class RetrainPolicy(models.Model):
    """When a dictionary's linker is retrained without an admin: every ``every_decisions`` new curator decisions,
    and/or nightly (Celery beat). The run is queued with ``method`` and ``params`` on ``collections``, evaluated
    on the promotion gate's collection and promoted through the gate.

    ``decisions_seen`` is the count of the dictionary's decisions when the last run was queued: the trigger
    compares the count now with it under a row lock, so concurrent decisions queue one run per threshold.
    """

    dictionary = models.OneToOneField(Dictionary, on_delete=models.CASCADE, related_name="retrain_policy")
    enabled = models.BooleanField(default=True)
    every_decisions = models.PositiveIntegerField(null=True, blank=True, help_text="Queue a run every N new decisions; empty: never by count.")
    nightly = models.BooleanField(default=False, help_text="Queue a run every night when there were new decisions.")
    method = models.CharField(max_length=32, choices=TrainingRun.Method.choices, default=TrainingRun.Method.BIOSYN)
    params = models.JSONField(default=dict, blank=True)
    collections = models.ManyToManyField("corpus.Collection", blank=True, related_name="+", help_text="Gold training data.")
    decisions_seen = models.PositiveIntegerField(default=0, help_text="The dictionary's decision count when the last run was queued.")
    last_triggered_at = models.DateTimeField(null=True, blank=True)
    last_run = models.ForeignKey(TrainingRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    last_error = PublicMessageField(blank=True, help_text="Why the last trigger queued no run (empty: it did).")
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "retrain policies"

    def __str__(self) -> str:
        return f"retrain policy of {self.dictionary.slug}"
