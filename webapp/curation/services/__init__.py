"""Curation services, one module per responsibility; this package names what views, the API and tasks call.

- :mod:`.decisions`: the one decision service (accept, relink, NIL, reject; propagation; conflicts), built of
  :mod:`.decision_rows` (what one decision writes on one mention part).
- :mod:`.errors`: the services' refusal (CurationError).
- :mod:`.undo`: undoing a decision with its batch.
- :mod:`.spans`: adding a mention, fixing a span.
- :mod:`.suggestions`: the panel's live ranking (read only) and storing the active linker's suggestions (on a POST, by the background task).
- :mod:`.detection`: mention detection of documents imported without mentions, and "Detect again".
"""

from __future__ import annotations

from webapp.curation.models import DECIDED_STATUSES, OPEN_STATUSES
from webapp.curation.services.decision_rows import HARD_NEGATIVES_PER_DECISION, part_count
from webapp.curation.services.decisions import LINK_ACTIONS, Conflict, Outcome, Scope, decide
from webapp.curation.services.detection import detect_documents, redetect
from webapp.curation.services.errors import CurationError
from webapp.curation.services.spans import add_mention, fix_span
from webapp.curation.services.suggestions import (
    SUGGESTIONS_K,
    PanelRanking,
    panel_ranking,
    prefetch_rest_of_document,
    store_ranking,
    store_suggestions,
    suggest_for_collection,
    suggest_links,
)
from webapp.curation.services.undo import last_undoable, undo

__all__ = [
    "DECIDED_STATUSES",
    "HARD_NEGATIVES_PER_DECISION",
    "LINK_ACTIONS",
    "OPEN_STATUSES",
    "SUGGESTIONS_K",
    "Conflict",
    "CurationError",
    "Outcome",
    "PanelRanking",
    "Scope",
    "add_mention",
    "decide",
    "detect_documents",
    "fix_span",
    "last_undoable",
    "panel_ranking",
    "prefetch_rest_of_document",
    "redetect",
    "part_count",
    "store_ranking",
    "store_suggestions",
    "suggest_for_collection",
    "suggest_links",
    "undo",
]
