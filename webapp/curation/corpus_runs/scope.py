"""What a corpus run covers: which documents, which concepts its links may name, which mention types it links.

A concept scope is a list of concept ids, the subtrees of some roots (the roots included, walked in the
dictionary's hierarchy by :func:`webapp.projects.concept_filter.build_filter`), or both (their union). MedCATtrainer's
users pre-annotate with a whitelist of a few hundred concepts: a mention's links name only concepts in the scope,
and a mention the run detected whose best concept is outside it is not kept (another concept's mention, only noise
to review there). Mentions already there (gold, a curator's) are never removed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Exists, OuterRef, QuerySet

from webapp.corpus.models import Collection, Document, Mention
from webapp.projects.concept_filter import build_filter
from webapp.vocab.models import Concept

ALL, UNANNOTATED = "all", "unannotated"
DOCUMENT_FILTERS = {ALL: "every document", UNANNOTATED: "documents without any mention yet"}
MAX_LISTED_CONCEPTS = 10_000  # a whitelist is a few hundred; a larger set is a subtree root's job


class ScopeError(ValueError):
    """The scope names something the collection's dictionary lacks; the message says what."""


@dataclass(frozen=True)
class RunScope:
    documents: str = ALL
    concepts: tuple[str, ...] = ()  # concept ids, in the dictionary's current release
    roots: tuple[str, ...] = ()  # subtree roots: every concept under one (the root too) is in scope
    mention_types: tuple[str, ...] = ()  # empty: every type
    allowed: frozenset[str] = field(default=frozenset(), compare=False)  # the concepts in scope, resolved

    @property
    def restricts_concepts(self) -> bool:
        return bool(self.concepts or self.roots)

    def allows(self) -> Callable[[str], bool] | None:
        return self.allowed.__contains__ if self.restricts_concepts else None

    def as_arguments(self) -> dict[str, Any]:
        return {"documents": self.documents, "concepts": list(self.concepts), "roots": list(self.roots),
                "mention_types": list(self.mention_types)}

    def describe(self) -> str:
        parts = [DOCUMENT_FILTERS.get(self.documents, self.documents)]
        if self.concepts:
            parts.append(f"{len(self.concepts)} listed concept{'s' if len(self.concepts) != 1 else ''}")
        if self.roots:
            parts.append(f"under {', '.join(self.roots)}")
        if self.mention_types:
            parts.append(f"types {', '.join(self.mention_types)}")
        return "; ".join(parts)


def _clean(values: Sequence[str] | str | None) -> tuple[str, ...]:
    if values is None:
        return ()
    if isinstance(values, str):
        values = values.replace("\n", ",").split(",")
    return tuple(dict.fromkeys(v.strip() for v in values if v and v.strip()))


def parse_scope(arguments: dict[str, Any]) -> RunScope:
    """The scope as a form, the API or the command gives it (lists, or comma-separated text)."""
    documents = (arguments.get("documents") or ALL).strip()
    if documents not in DOCUMENT_FILTERS:
        raise ScopeError(f"documents must be one of {', '.join(DOCUMENT_FILTERS)}, not {documents!r}")
    concepts = _clean(arguments.get("concepts"))
    if len(concepts) > MAX_LISTED_CONCEPTS:
        raise ScopeError(f"{len(concepts):,} concepts listed, over {MAX_LISTED_CONCEPTS:,}: name a subtree root instead")
    return RunScope(documents, concepts, _clean(arguments.get("roots")), _clean(arguments.get("mention_types")))


def resolve(scope: RunScope, collection: Collection) -> RunScope:
    """The scope with its concepts resolved in the dictionary's current release; :class:`ScopeError` names an id or
    root the release lacks."""
    if not scope.restricts_concepts:
        return scope
    dictionary = collection.dictionary
    version = dictionary.latest_version() if dictionary is not None else None
    if dictionary is None or version is None:
        raise ScopeError(f"collection {collection.slug} has no dictionary release to take concepts from")
    allowed: set[str] = set()
    if scope.concepts:
        found = set(Concept.objects.filter(version=version, concept_id__in=scope.concepts).values_list("concept_id", flat=True))
        missing = [c for c in scope.concepts if c not in found]
        if missing:
            raise ScopeError(f"not concepts of {dictionary} (release {version.release}): {', '.join(missing[:10])}"
                             + (f" and {len(missing) - 10} more" if len(missing) > 10 else ""))
        allowed |= found
    if scope.roots:
        try:
            subtree = build_filter(dictionary, [], scope.roots)
        except ValueError as exc:
            raise ScopeError(str(exc)) from exc
        allowed |= subtree.concept_ids if subtree is not None else set()
    return RunScope(scope.documents, scope.concepts, scope.roots, scope.mention_types, frozenset(allowed))


def documents_of(collection: Collection, scope: RunScope) -> QuerySet[Document]:
    """The collection's documents the run covers, in id order."""
    found = Document.objects.filter(collection=collection)
    if scope.documents == UNANNOTATED:
        found = found.filter(~Exists(Mention.objects.filter(document=OuterRef("pk"))))
    return found.order_by("pk")
