"""Projects, their members and roles, the assignment of documents to annotators, and adjudicated spans.

The annotator's copy of a document (``Assignment.copy``) lives in the annotator's ``Workspace`` collection
(``Collection.is_workspace``), so the ordinary curation screen, decisions and undo serve double annotation unchanged,
and curation of one annotator never touches another's mentions. ``Adjudication`` records, per span of a project's
document, what became the curated link and whose decision it was.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q

from webapp.corpus.models import Collection, Document, Mention
from webapp.vocab.models import KnownType


class Project(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    collection = models.ForeignKey(
        Collection, on_delete=models.PROTECT, related_name="projects",
        help_text="The documents the project curates; its adjudicated links land on them.",
    )
    documents = models.ManyToManyField(
        Document, blank=True, related_name="+",
        help_text="A subset of the collection's documents; empty: all of them.",
    )
    annotators_per_document = models.PositiveSmallIntegerField(
        default=2, help_text="1: single annotation; 2 or more: each document is annotated independently by that many annotators.",
    )
    # The concept filter: candidates, search and decisions of the project are restricted to concepts with one of
    # these known types and/or under one of these concepts (their subtrees, the roots included). Both empty: no filter.
    concept_types = models.ManyToManyField(KnownType, blank=True, related_name="+")
    concept_roots = ArrayField(models.CharField(max_length=100), default=list, blank=True,
                               help_text="Concept ids whose subtrees the project links to.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]
        constraints = [models.CheckConstraint(condition=Q(annotators_per_document__gte=1), name="project_at_least_one_annotator")]

    def __str__(self) -> str:
        return self.title or self.slug

    @property
    def double_annotation(self) -> bool:
        return self.annotators_per_document > 1


class Member(models.Model):
    class Role(models.TextChoices):
        ANNOTATOR = "annotator", "Annotator"
        ADJUDICATOR = "adjudicator", "Adjudicator"
        MANAGER = "manager", "Manager"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="members")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="project_memberships")
    role = models.CharField(max_length=16, choices=Role.choices)
    added_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "role", "user__username"]
        constraints = [models.UniqueConstraint(fields=["project", "user", "role"], name="one_membership_per_role")]

    def __str__(self) -> str:
        return f"{self.user} ({self.role}) in {self.project}"


class Workspace(models.Model):
    """One annotator's collection of document copies within a project."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="workspaces")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="workspaces")
    collection = models.OneToOneField(Collection, on_delete=models.PROTECT, related_name="workspace")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "annotator"], name="one_workspace_per_annotator")]

    def __str__(self) -> str:
        return f"{self.annotator}'s copies in {self.project}"


class Assignment(models.Model):
    class State(models.TextChoices):
        ASSIGNED = "assigned", "To do"
        DONE = "done", "Done"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="assignments")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="assignments",
                                 help_text="The project's document.")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="assignments")
    copy = models.OneToOneField(Document, on_delete=models.PROTECT, related_name="assignment",
                                help_text="The annotator's copy, in their workspace collection.")
    state = models.CharField(max_length=16, choices=State.choices, default=State.ASSIGNED)
    assigned_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    assigned_at = models.DateTimeField(auto_now_add=True)
    done_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["project", "document", "annotator__username"]
        constraints = [
            models.UniqueConstraint(fields=["project", "document", "annotator"], name="one_assignment_per_annotator"),
            models.CheckConstraint(condition=Q(state="done", done_at__isnull=False) | ~Q(state="done"), name="assignment_done_has_time"),
        ]
        indexes = [models.Index(fields=["annotator", "state"], name="assignment_annotator_state")]

    def __str__(self) -> str:
        return f"{self.document} -> {self.annotator} ({self.state})"


class Adjudication(models.Model):
    """What became the curated decision of one span of a project's document, and from whom.

    ``agreed``: every annotator made the same decision and it was applied as it stood; ``adjudicated``: they
    differed and the adjudicator took one annotator's decision (``chosen_annotator``) or made a third one (empty).
    """

    class State(models.TextChoices):
        AGREED = "agreed", "All annotators agreed"
        ADJUDICATED = "adjudicated", "Adjudicated"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="adjudications")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="adjudications")
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    mention = models.ForeignKey(Mention, null=True, blank=True, on_delete=models.SET_NULL, related_name="adjudications",
                                help_text="The project document's mention the decision was written to.")
    state = models.CharField(max_length=16, choices=State.choices)
    label = models.CharField(max_length=200, help_text="The decision: a concept id, NIL, or REJECT (not a mention).")
    chosen_annotator = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    annotator_labels = models.JSONField(default=dict, help_text="Each annotator's label for the span, by username.")
    # By label, not by import: curation sits above projects in the layers (README, "Layers"); the relation is the same.
    decision = models.ForeignKey("curation.Decision", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    adjudicator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["document", "start", "end"]
        constraints = [models.UniqueConstraint(fields=["project", "document", "start", "end"], name="one_adjudication_per_span")]

    def __str__(self) -> str:
        return f"{self.document} [{self.start}:{self.end}] = {self.label} ({self.state})"
