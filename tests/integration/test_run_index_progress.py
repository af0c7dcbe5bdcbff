"""A run's index phase reports what the Models page's build card does: names done of all, names/s, time left
(issue #46): the recipes hand Linker.build the reporter's index callback."""

from __future__ import annotations

import time

from webapp.training.models import TrainingRun
from webapp.training.progress import Reporter


def test_the_index_phase_reports_count_rate_and_time_left(alice) -> None:  # type: ignore[no-untyped-def]
    from webapp.vocab.models import Dictionary

    dictionary = Dictionary.objects.create(slug="d", title="D")
    run = TrainingRun.objects.create(dictionary=dictionary, method="biosyn", state="running", created_by=alice)
    reporter = Reporter(run)
    reporter.phase("index")
    reporter.index("encode", 0, 74431)
    time.sleep(0.05)
    reporter.index("encode", 12000, 74431)
    reporter.flush()
    run.refresh_from_db()
    assert run.phase == "index" and run.progress == 12000 and run.progress_total == 74431
    assert run.progress_note.startswith("encoding names: 12,000 / 74,431 (16%), ")
    assert "names/s" in run.progress_note and "left" in run.progress_note
    assert abs(run.fraction - 12000 / 74431) < 1e-6

