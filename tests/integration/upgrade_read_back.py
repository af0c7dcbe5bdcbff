"""Run with this checkout's code on the database tests/integration/upgrade_old_data.py made and HEAD migrated:
read back, through today's models, what that script printed, in the same shape, as one line of JSON.

Evaluations and import jobs took new ids in the job-model migrations (webapp/training/migrations/0012, imports
0001); they are compared by their fields, and the run's promotion-gate verdict must name the evaluation's new id.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
import django  # noqa: E402

django.setup()


def main() -> None:
    from webapp.corpus.models import Collection, Mention
    from webapp.curation.models import Decision
    from webapp.imports.models import ImportJob
    from webapp.projects.models import Member, Project
    from webapp.training.models import Evaluation, TrainingRun
    from webapp.vocab.models import Concept

    runs = list(TrainingRun.objects.order_by("pk"))
    evaluations = list(Evaluation.objects.order_by("pk"))
    projects = list(Project.objects.order_by("pk"))
    print(json.dumps({
        "decisions": [[d.pk, d.mention_id, d.action, d.concept_id, d.user.username]
                      for d in Decision.objects.order_by("pk")],
        "runs": [[r.pk, r.method, r.params, r.metrics, r.loss_history, r.state, r.created_by.username,
                  [c.slug for c in r.collections.all()]] for r in runs],
        "gate_names_its_evaluation": runs[0].gate_result["evaluation"] == evaluations[0].pk,
        "evaluations": [[e.index_version_id, e.collection_id, e.metrics, e.state, e.created_by.username]
                        for e in evaluations],
        "import_jobs": [[j.import_kind, j.path, j.params, j.state, j.error, j.created_by.username]
                        for j in ImportJob.objects.order_by("created_at", "pk")],
        "projects": [[p.pk, p.slug, p.collection_id] for p in projects],
        "members": sorted([m.user.username, m.role] for m in Member.objects.filter(project=projects[0])),
        "documents": Collection.objects.get(slug="demo").documents.count(),
        "mentions": Mention.objects.count(),
        "concepts": Concept.objects.count(),
    }))


if __name__ == "__main__":
    main()
