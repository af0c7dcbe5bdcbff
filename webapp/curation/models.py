"""The curation log: one Decision row per decision a curator makes, and the hard negatives it yields.

A Decision keeps who, when, what (action, chosen concept, its rank and the model version that suggested it),
how long the curator looked at the mention, and what is needed to undo it (the mention's state before, the
links and synonym it created, the mention's version after). Undoing never deletes the row: ``undone_at``
is set, so the log keeps every step.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q

from webapp.corpus.models import Document, Mention
from webapp.vocab.models import Concept, Name

# Mentions waiting for a curator (the review queue; the only ones whose model suggestions may be replaced)
# and mentions a curator has decided. Every curation page and service counts with these two.
OPEN_STATUSES = (Mention.Status.PENDING, Mention.Status.SUGGESTED)
DECIDED_STATUSES = (Mention.Status.ACCEPTED, Mention.Status.RELINKED, Mention.Status.NIL, Mention.Status.REJECTED)


class Decision(models.Model):
    class Action(models.TextChoices):
        ACCEPT = "accept", "Accepted the suggestion"
        RELINK = "relink", "Linked another concept"
        NIL = "nil", "NIL (no concept fits)"
        REJECT = "reject", "Rejected the span"
        ADD_MENTION = "add_mention", "Added a mention"
        FIX_SPAN = "fix_span", "Fixed the span"

    class Via(models.TextChoices):
        CANDIDATE = "candidate", "Candidate list"
        SEARCH = "search", "Concept search"
        PARENT = "parent", "Parent of a candidate"
        SIBLING = "sibling", "Sibling of a candidate"
        PROPAGATED = "propagated", "Applied to an identical mention"
        TEXT = "text", "Text selection"
        API = "api", "REST API"
        AUTO = "auto", "Auto-accepted above the collection's confidence threshold"
        ADJUDICATION = "adjudication", "Adjudication of a project's annotators"

    batch = models.UUIDField(default=uuid.uuid4, db_index=True, help_text="Decisions applied together (propagation) share a batch and are undone together.")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="decisions")
    # SET_NULL: undoing an added mention deletes the mention but keeps its log rows.
    mention = models.ForeignKey(Mention, null=True, blank=True, on_delete=models.SET_NULL, related_name="decisions")
    mention_text = models.TextField(help_text="The mention's text when the decision was made.")
    action = models.CharField(max_length=16, choices=Action.choices)
    via = models.CharField(max_length=16, choices=Via.choices, default=Via.CANDIDATE)
    part = models.PositiveSmallIntegerField(default=0)
    concept = models.ForeignKey(Concept, null=True, blank=True, on_delete=models.SET_NULL, related_name="decisions")
    concept_ref = models.CharField(max_length=200, blank=True)
    rank = models.PositiveSmallIntegerField(null=True, blank=True, help_text="Rank of the chosen concept among the model's suggestions (1 = top); empty if it was not suggested.")
    score = models.FloatField(null=True, blank=True)
    model_version = models.CharField(max_length=120, blank=True, help_text="The index/model that made the suggestions the curator saw.")
    time_on_task_ms = models.PositiveIntegerField(null=True, blank=True, help_text="From showing the mention's candidates to the decision.")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="curation_decisions")
    created_at = models.DateTimeField(auto_now_add=True)
    # --- for undo ---
    previous_status = models.CharField(max_length=16, choices=Mention.Status.choices, blank=True)
    previous_start = models.PositiveIntegerField(null=True, blank=True)
    previous_end = models.PositiveIntegerField(null=True, blank=True)
    created_links = ArrayField(models.BigIntegerField(), default=list, blank=True, help_text="Curator links this decision created.")
    synonym = models.ForeignKey(Name, null=True, blank=True, on_delete=models.SET_NULL, related_name="decisions", help_text="Curator synonym this decision created.")
    teaches = models.BooleanField(
        default=True,
        help_text="Training evidence (webapp.curation.teaching): false for a link to a parent, or a decision the curator made without teaching.",
    )
    result_updated_at = models.DateTimeField(null=True, blank=True, help_text="The mention's version after the decision: undo refuses if it changed since.")
    undone_at = models.DateTimeField(null=True, blank=True)
    undone_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["document", "user", "-created_at"], name="decision_doc_user_recent"),
            models.Index(fields=["mention", "-created_at"], name="decision_mention_recent"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(undone_at__isnull=True) | Q(undone_by__isnull=False), name="decision_undone_by_someone"),
        ]

    def __str__(self) -> str:
        target = self.concept_ref or ("NIL" if self.action == self.Action.NIL else "")
        return f"{self.user_id} {self.action} {self.mention_text!r} {target}".strip()

    @property
    def is_undone(self) -> bool:
        return self.undone_at is not None


class HardNegative(models.Model):
    """A concept the curator turned down for a mention text: training pairs (text, concept) labelled negative."""

    decision = models.ForeignKey(Decision, on_delete=models.CASCADE, related_name="hard_negatives")
    mention_text = models.TextField()
    concept = models.ForeignKey(Concept, on_delete=models.CASCADE, related_name="hard_negatives")
    rank = models.PositiveSmallIntegerField(null=True, blank=True, help_text="Where the model had ranked it.")
    score = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["decision", "rank"]
        constraints = [models.UniqueConstraint(fields=["decision", "concept"], name="one_hard_negative_per_decision_concept")]

    def __str__(self) -> str:
        return f"{self.mention_text!r} is not {self.concept_id}"

