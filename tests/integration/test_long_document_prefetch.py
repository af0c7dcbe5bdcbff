"""A panel on a long document prefetches the rankings of the part the curator sees (webapp.corpus.windows), not of
the whole document: 20,000 mentions would keep the background thread busy for minutes after every panel."""

from __future__ import annotations

import pytest

from tests.integration.long_document import SENTENCE, WORD
from webapp.corpus.models import Document, Mention
from webapp.corpus.windows import window_at
from webapp.curation.services import panel_ranking, prefetch_rest_of_document
from webapp.curation.services.rankings import RANKINGS, wait_for_prefetch

pytestmark = pytest.mark.django_db


def test_a_panel_prefetches_the_part_of_its_mention_only(demo) -> None:  # type: ignore[no-untyped-def]
    at = SENTENCE.index(WORD)
    document = Document.objects.create(
        collection=demo, external_id="long-1", text=SENTENCE * 350
    )  # two parts
    Mention.objects.bulk_create(
        Mention(
            document=document, start=i * len(SENTENCE) + at, end=i * len(SENTENCE) + at + len(WORD), text=WORD
        )
        for i in range(350)
    )
    mentions = list(
        Mention.objects.select_related("document__collection__dictionary")
        .filter(document=document)
        .order_by("start")
    )
    second_part = window_at(document, mentions[-1].start)
    assert second_part.number == 2 and second_part.count == 2
    opened = mentions[-5]  # in the second part
    prefetch_rest_of_document(opened, panel_ranking(opened))  # as the panel view does once it has answered
    wait_for_prefetch()
    neighbour = mentions[-1]
    hits = RANKINGS.hits
    assert panel_ranking(neighbour) is not None and RANKINGS.hits == hits + 1  # prefetched: same part
    far = mentions[0]
    assert far.start < second_part.start
    misses = RANKINGS.misses
    assert (
        panel_ranking(far) is not None and RANKINGS.misses == misses + 1
    )  # another part: linked when opened
