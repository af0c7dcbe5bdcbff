"""Evaluations: an index version's Acc@1/Acc@5 on a gold collection, and each gold mention's outcome."""

from __future__ import annotations

from django.db import models

from webapp.jobs.models import Job
from webapp.linking.models import IndexVersion
from webapp.training.models.job_link import job_link


class Evaluation(Job):
    """Acc@1/Acc@5 of an index version (its encoder and names) on a gold collection, computed by a worker (a job)."""

    job_kind = "evaluation"

    job_ptr = job_link()
    index_version = models.ForeignKey(IndexVersion, on_delete=models.CASCADE, related_name="evaluations")
    collection = models.ForeignKey("corpus.Collection", on_delete=models.CASCADE, related_name="evaluations")
    metrics = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"evaluation {self.pk} of index {self.index_version_id} on {self.collection_id} ({self.state})"

    @property
    def acc1(self) -> float | None:
        return self.metrics.get("acc@1")

    @property
    def acc5(self) -> float | None:
        return self.metrics.get("acc@5")


class MentionOutcome(models.Model):
    """One gold mention's result in an :class:`Evaluation`: what the index put first and where gold came.

    Kept per mention so two evaluations on the same collection can be set side by side mention by mention
    (the comparison page's deltas, McNemar's test, the list of mentions whose top-1 changed). ``gold`` and
    ``predicted`` hold concept ids per composite part joined by ``|`` (``+`` within a part naming several).
    """

    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="outcomes")
    mention = models.ForeignKey("corpus.Mention", on_delete=models.CASCADE, related_name="+")
    mention_type = models.CharField(max_length=64, blank=True)
    gold = models.CharField(max_length=500)
    predicted = models.CharField(max_length=500, blank=True, help_text="Top-1 concept id per part.")
    rank = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Rank at which every part is right (1 = top-1 correct); empty: not in the top k.",
    )

    class Meta:
        ordering = ["evaluation", "mention"]
        constraints = [models.UniqueConstraint(fields=["evaluation", "mention"], name="one_outcome_per_evaluation_mention")]

    def __str__(self) -> str:
        return f"evaluation {self.evaluation_id} mention {self.mention_id}: rank {self.rank}"

    @property
    def correct(self) -> bool:
        return self.rank == 1
