"""What training tells the other apps, so that it need not import them (the layering test forbids import loops)."""

from __future__ import annotations

from django.dispatch import Signal

# Sent by webapp.training.services.promote_index once an index serves its dictionary: ``index`` (the IndexVersion)
# and ``previous_version_id`` (the dictionary version the replaced index served; None when none was active).
# webapp.training.releases listens: a newer release starting to serve carries the old release's curator synonyms over.
index_promoted = Signal()
