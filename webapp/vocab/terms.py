"""The words of a version's names (:class:`webapp.vocab.models.Term`) during a dictionary import.

Every write to ``vocab_name`` updates the words through the triggers of migration 0005, except a dictionary
import's own COPY batches: the import defers them for its transaction (:func:`defer_terms`) and counts the new
version's words in one statement at the end (:func:`write_terms`), 3 s for 3M names where the per-batch updates
cost 100 s and left every common word's row rewritten hundreds of times.
"""

from __future__ import annotations

from django.db import connection

from webapp.vocab.models import DictionaryVersion

__all__ = ["defer_terms", "write_terms"]

_VERSION_WORDS = r"""
    INSERT INTO vocab_term (version_id, term, names)
    SELECT c.version_id, w.term, count(*)
    FROM vocab_name n
    JOIN vocab_concept c ON c.id = n.concept_id
    CROSS JOIN LATERAL (SELECT DISTINCT word AS term FROM regexp_split_to_table(n.normalized, '\s+') word WHERE word <> '') w
    WHERE c.version_id = %s
    GROUP BY c.version_id, w.term
    ON CONFLICT (version_id, term) DO UPDATE SET names = vocab_term.names + EXCLUDED.names
"""


def defer_terms() -> None:
    """Names inserted from now until :func:`write_terms` (or the end of the transaction) leave the words alone."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL vocab.terms_deferred = 'on'")


def write_terms(version: DictionaryVersion) -> None:
    """Count the words of ``version``'s names (written while deferred) and let later inserts count their own."""
    with connection.cursor() as cursor:
        cursor.execute(_VERSION_WORDS, [version.pk])
        cursor.execute("SET LOCAL vocab.terms_deferred = 'off'")
