"""Storing many suggestions refreshes the planner's statistics, as a large import does.

With the statistics an import leaves (gold links only), PostgreSQL reads one mention's suggestions through the
(origin, concept) index, every model link of the table: storing a collection's suggestions grew quadratically
(BC5CDR's development set: minutes) and each panel and decision paid 35-70 ms per query until the next ANALYZE
(bench/load.py, on a server without autovacuum).
"""

from __future__ import annotations

from django.db import connection

from webapp.corpus.models import Mention
from webapp.curation.services import suggestions


def _common_origins() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT most_common_vals::text FROM pg_stats WHERE tablename = 'corpus_link' AND attname = 'origin'")
        row = cursor.fetchone()
    return row[0] if row else ""


def test_storing_many_suggestions_tells_the_planner_about_model_links(demo, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(suggestions, "ANALYZE_AFTER_MENTIONS", 10)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE corpus_link")  # what the import left: no model link yet
    assert "model" not in _common_origins()

    stored = suggestions.suggest_links(Mention.objects.filter(document__collection=demo), "medic-demo", batch_documents=1)

    assert stored == 40
    assert "model" in _common_origins()


def test_a_few_suggestions_leave_the_statistics_alone(demo, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    analysed: list[bool] = []
    monkeypatch.setattr(suggestions, "analyse_links", lambda: analysed.append(True))

    suggestions.suggest_links(Mention.objects.filter(document__collection=demo), "medic-demo")

    assert analysed == []  # 40 mentions: under ANALYZE_AFTER_MENTIONS
