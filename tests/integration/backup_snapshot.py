"""What a backup must keep, read from the database Django is pointed at: run in the test's process before the
backup, and as ``python tests/integration/backup_snapshot.py`` (DATABASE_URL, ARTIFACT_ROOT) on the restored one.

Artifact paths are given relative to ARTIFACT_ROOT (the restore moves them), and each one is checked to be under it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any


def _rows(queryset: Any, root: Path) -> list[dict[str, Any]]:
    rows = []
    for row in queryset.order_by("pk").values():
        for name in ("artifact_path", "base_model"):
            value = row.get(name)
            if value and value.startswith("/"):
                assert value.startswith(str(root) + "/"), f"{name} {value} is not under ARTIFACT_ROOT {root}"
                row[name] = os.path.relpath(value, root)
        rows.append(row)
    return json.loads(json.dumps(rows, default=str))


def snapshot() -> dict[str, Any]:
    from django.conf import settings

    from webapp.artifacts.models import Manifest
    from webapp.corpus.models import Mention
    from webapp.curation.models import Decision
    from webapp.curation.services.suggestions import panel_ranking
    from webapp.linking.models import DetectorVersion, EncoderModel, IndexVersion
    from webapp.training.models import TrainingRun, WordVectorModel

    root = Path(settings.ARTIFACT_ROOT)
    panel = {}
    for mention in Mention.objects.select_related("document__collection__dictionary").order_by("pk")[:8]:
        ranking = panel_ranking(mention)
        assert ranking is not None, "no active index: the panel would show no live candidates"
        panel[str(mention.pk)] = [[c.concept_id, c.name, round(c.score, 5)] for c in ranking.candidates]
    return {
        "decisions": _rows(Decision.objects.all(), root),
        "runs": _rows(TrainingRun.objects.all(), root),
        "encoders": _rows(EncoderModel.objects.all(), root),
        "indexes": _rows(IndexVersion.objects.all(), root),
        "detectors": _rows(DetectorVersion.objects.all(), root),
        "word_vectors": _rows(WordVectorModel.objects.all(), root),
        "mentions": Mention.objects.count(),
        "panel": panel,
        # The artifact store's manifests move with the rows' paths (another host finds the restored index there).
        "manifests": sorted([os.path.relpath(path, root), digest] for path, digest in
                            Manifest.objects.values_list("logical_path", "digest")),
    }


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django

    django.setup()
    print(json.dumps(snapshot()))
