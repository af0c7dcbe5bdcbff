"""spaCy pipeline components: ``elwb_linker`` links a ``Doc``'s entities with a linker artifact, scispaCy-style, and
``elwb_detector`` sets its entities with the workbench's detectors (the dictionary matcher, a trained tagger, or
both merged), so a blank pipeline detects and links as the web app's pre-annotation does::

    import spacy
    import linker.spacy_component  # or nothing: the factories are also spaCy entry points of this package

    nlp = spacy.blank("en")
    nlp.add_pipe("elwb_detector", config={"dictionary": "var/artifacts/medic-linker"})
    nlp.add_pipe("elwb_linker", config={"artifact": "var/artifacts/medic-linker", "k": 5, "threshold": None})
    for ent in nlp(text).ents:
        ent._.kb_ents, ent._.concept

This is the only module of :mod:`linker` that imports spaCy (a dev extra); the rest imports without it. The
linking is :meth:`linker.linker.Linker.link_documents` (re-ranked in context where the artifact has a re-ranker),
the detection :class:`linker.detect.detector.Detector`: this module only moves their results onto spaCy spans.
"""

# No ``from __future__ import annotations``: spaCy validates a factory's config against its annotations (read at run time).

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

try:
    from spacy.language import Language
    from spacy.tokens import Doc, Span
    from spacy.util import filter_spans, minibatch
except ImportError as exc:  # the rest of linker works without spaCy
    raise ImportError("linker.spacy_component needs spaCy: pip install 'spacy>=3.7' (the dev extra has it)") from exc

from linker.linker import Linker
from linker.rerank.context import MentionSpan
from linker.retrieval import Candidate

__all__ = ["CONTEXTS", "DETECTOR_FACTORY", "LINKER_FACTORY", "EntityDetector", "EntityLinker", "make_detector",
           "make_linker"]

LINKER_FACTORY = "elwb_linker"
DETECTOR_FACTORY = "elwb_detector"
# What text a mention is linked in: abbreviations defined there are expanded, and a re-ranker reads a window of it.
CONTEXTS = ("document", "sentence", "none")

# Span extensions. ``kb_ents``: (concept id, score) best first, at most k, those under the threshold left out
# (scispaCy's); ``kb_parts``: the same per part of a composite mention ("breast and ovarian cancer": two parts);
# ``concept``: the best concept id, None under the threshold; ``concepts``: each part's best; ``confidence``: the
# calibrated probability that the top concept is right (None where the artifact has no calibration);
# ``detector``: which detector found the span (matcher, tagger or both), for spans elwb_detector set.
_EXTENSIONS: dict[str, Any] = {"kb_ents": (), "kb_parts": (), "concept": None, "concepts": (), "confidence": None,
                               "detector": None}


def _set_extensions() -> None:
    for name, default in _EXTENSIONS.items():
        if not Span.has_extension(name):
            Span.set_extension(name, default=default)


def _resolved_error(component: str, what: str, path: str, exc: Exception) -> Exception:
    """The loading error of ``path``, of the same kind, saying which component and setting asked for it."""
    message = f"spaCy component {component!r}: cannot load the {what} {path!r}: {exc}"
    return exc.__class__(message) if isinstance(exc, (FileNotFoundError, ValueError)) else ValueError(message)


class EntityLinker:
    """Links each entity of a ``Doc`` (see the module for what it sets). ``pipe`` links the entities of a batch of
    documents in one search (one encoder batch), each in its own context."""

    def __init__(
        self, name: str, artifact: str, k: int = 5, threshold: float | None = None, context: str = "document",
        rerank: bool = True, device: str | None = None, batch_size: int = 64,
    ) -> None:
        if context not in CONTEXTS:
            raise ValueError(f"spaCy component {name!r}: context {context!r}; expected one of {', '.join(CONTEXTS)}")
        if k < 1:
            raise ValueError(f"spaCy component {name!r}: k must be at least 1, not {k}")
        self.name = name
        self.k, self.threshold, self.context, self.rerank = k, threshold, context, rerank
        self.batch_size = batch_size
        try:
            if device is None:
                self.linker = Linker.load(artifact)
            else:
                from linker.device import choose_device

                self.linker = Linker.load(artifact, device=choose_device(device))
        except (OSError, ValueError) as exc:
            raise _resolved_error(name, "linker artifact", artifact, exc) from exc
        _set_extensions()

    def __call__(self, doc: Doc) -> Doc:
        self.link([doc])
        return doc

    def pipe(self, stream: Iterable[Doc], batch_size: int | None = None) -> Iterator[Doc]:
        for docs in minibatch(stream, size=batch_size or self.batch_size):
            self.link(docs)
            yield from docs

    def _groups(self, docs: Sequence[Doc]) -> tuple[list[tuple[list[MentionSpan], str | None]], list[Span]]:
        """The mentions to link, grouped by the text they are linked in (one group per document, or per sentence),
        offsets counted in that text; and the entities in the groups' order."""
        groups: list[tuple[list[MentionSpan], str | None]] = []
        ents: list[Span] = []
        for doc in docs:
            if not doc.ents:
                continue
            if self.context == "sentence" and not doc.has_annotation("SENT_START"):
                raise ValueError(f"spaCy component {self.name!r}: context 'sentence' needs sentence boundaries: add "
                                 f"a parser or a sentencizer before it (nlp.add_pipe('sentencizer', first=True))")
            by_text: dict[int, int] = {}  # the context's first character -> its group
            for ent in doc.ents:
                if self.context == "none":
                    key, text, mention = 0, None, MentionSpan(ent.text)
                else:
                    where = ent.sent if self.context == "sentence" else doc[:]
                    key, text = where.start_char, where.text
                    mention = MentionSpan(ent.text, ent.start_char - key, ent.end_char - key)
                if key not in by_text:
                    by_text[key] = len(groups)
                    groups.append(([], text))
                groups[by_text[key]][0].append(mention)
                ents.append(ent)
        return groups, ents

    def link(self, docs: Sequence[Doc]) -> None:
        """Link the entities of ``docs``, all in one search."""
        groups, ents = self._groups(docs)
        if not ents:
            return
        linker = self.linker
        queries = [linker.queries_for([m.text for m in mentions], text) for mentions, text in groups]
        linked = linker.link_documents(groups, self.k, self.rerank, queries)
        flat_queries = [qs for group in queries for qs in group]
        parts = [one.by_part(len(qs)) for qs, one in zip(flat_queries, (m for g in linked for m in g), strict=True)]
        confidences = linker.confidences(flat_queries, parts)
        for ent, mention_parts, confidence in zip(ents, parts, confidences, strict=True):
            kept = [self._scored(part) for part in mention_parts]
            best = self._best_first(mention_parts)
            ent._.kb_parts = kept
            ent._.kb_ents = best
            ent._.concept = best[0][0] if best else None
            ent._.concepts = [part[0][0] if part else None for part in kept]
            ent._.confidence = confidence

    def _scored(self, candidates: Iterable[Candidate]) -> list[tuple[str, float]]:
        threshold = self.threshold
        return [(c.concept_id, float(c.score)) for c in candidates if threshold is None or c.score >= threshold]

    def _best_first(self, parts: Sequence[Sequence[Candidate]]) -> list[tuple[str, float]]:
        """Every part's candidates as one list, best first, each concept once (at its best score), at most k."""
        seen: set[str] = set()
        out: list[tuple[str, float]] = []
        for concept_id, score in sorted(self._scored(c for part in parts for c in part), key=lambda p: -p[1]):
            if concept_id not in seen:
                seen.add(concept_id)
                out.append((concept_id, score))
        return out[: self.k]


class EntityDetector:
    """Sets a ``Doc``'s entities from the workbench's detectors (a tagger folder, dictionaries, or both merged by
    ``rule``: :class:`linker.detect.detector.Detector`). A detected span that does not fall on token boundaries
    is widened to the tokens it touches; with ``overwrite`` false, entities already set (by an entity ruler or
    NER before it) are kept and detected spans that overlap them are left out."""

    def __init__(
        self, name: str, tagger: str | None = None, dictionary: str | list[str] | None = None,
        dictionary_format: str | None = None, rule: str = "tagger-first", label: str = "ENTITY",
        overwrite: bool = False, batch_size: int = 16, device: str | None = None,
    ) -> None:
        from linker.detect.detector import Detector

        dictionaries = [dictionary] if isinstance(dictionary, str) else list(dictionary or [])
        self.name, self.label, self.overwrite, self.batch_size = name, label, overwrite, batch_size
        try:
            self.detector = Detector.load(tagger, dictionaries, dictionary_format, rule, device)
        except (OSError, ValueError) as exc:
            raise _resolved_error(name, "detectors", ", ".join(filter(None, [tagger, *dictionaries])), exc) from exc
        _set_extensions()

    def __call__(self, doc: Doc) -> Doc:
        self.set_entities([doc])
        return doc

    def pipe(self, stream: Iterable[Doc], batch_size: int | None = None) -> Iterator[Doc]:
        for docs in minibatch(stream, size=batch_size or 64):
            self.set_entities(docs)
            yield from docs

    def set_entities(self, docs: Sequence[Doc]) -> None:
        """Detect in every text of ``docs`` at once (the tagger reads ``batch_size`` windows a pass)."""
        for doc, found in zip(docs, self.detector.detect([d.text for d in docs], self.batch_size), strict=True):
            spans = []
            for s in found:
                span = doc.char_span(s.start, s.end, label=self.label, alignment_mode="expand")
                if span is not None and len(span):
                    span._.detector = s.source
                    spans.append(span)
            detected = filter_spans(spans)
            if self.overwrite:
                doc.ents = detected
                continue
            taken = {i for ent in doc.ents for i in range(ent.start, ent.end)}
            kept = [s for s in detected if not taken.intersection(range(s.start, s.end))]
            doc.ents = sorted([*doc.ents, *kept], key=lambda e: e.start)


@Language.factory(
    LINKER_FACTORY,
    default_config={"artifact": None, "k": 5, "threshold": None, "context": "document", "rerank": True,
                    "device": None, "batch_size": 64},
)
def make_linker(
    nlp: Language, name: str, artifact: str | None, k: int, threshold: float | None, context: str,
    rerank: bool, device: str | None, batch_size: int,
) -> EntityLinker:
    if not artifact:
        raise ValueError(f"spaCy component {name!r}: give the linker artifact folder "
                         f"(nlp.add_pipe({LINKER_FACTORY!r}, config={{'artifact': ...}}))")
    return EntityLinker(name, artifact, k, threshold, context, rerank, device, batch_size)


@Language.factory(
    DETECTOR_FACTORY,
    default_config={"tagger": None, "dictionary": None, "dictionary_format": None, "rule": "tagger-first",
                    "label": "ENTITY", "overwrite": False, "batch_size": 16, "device": None},
)
def make_detector(
    nlp: Language, name: str, tagger: str | None, dictionary: str | list[str] | None,
    dictionary_format: str | None, rule: str, label: str, overwrite: bool, batch_size: int, device: str | None,
) -> EntityDetector:
    return EntityDetector(name, tagger, dictionary, dictionary_format, rule, label, overwrite, batch_size, device)
