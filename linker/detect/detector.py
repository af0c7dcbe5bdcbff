"""The detectors of ``python -m linker detect`` and of the spaCy component ``elwb_detector``, put together once:
a trained tagger, a dictionary matcher over the names of dictionaries, or both merged by a rule
(:mod:`linker.detect.merge`, the tagger's known names handled as the web app's pre-annotation does).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from linker.detect.matcher import DictionaryMatcher
from linker.detect.merge import RULES, merge
from linker.detect.spans import Span
from linker.detect.tagger import Tagger

__all__ = ["Detector", "dictionary_names"]


def dictionary_names(path: str | Path, dictionary_format: str | None = None) -> Iterable[str]:
    """Every name of a dictionary file (any format :func:`linker.data.iter_dictionary` reads), or of the name
    table of a linker artifact folder (the names the web app's matcher uses: those of the index it links with)."""
    from linker.data import iter_dictionary
    from linker.dictionary import NameTable

    path = Path(path)
    if path.is_dir():
        if not (path / "table").is_dir():
            raise FileNotFoundError(f"{path}: a folder that is not a linker artifact (no table/): give a dictionary "
                                    f"file or an artifact folder")
        return NameTable.load(path / "table").raw_names
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such dictionary file")
    return (name for record in iter_dictionary(path, dictionary_format) for name in record.all_names())


class Detector:
    """A tagger, a dictionary matcher, or both; :meth:`detect` gives each text's spans, merged by ``rule``."""

    def __init__(self, matcher: DictionaryMatcher | None, tagger: Tagger | None, rule: str = "tagger-first") -> None:
        if matcher is None and tagger is None:
            raise ValueError("nothing to detect with: give a tagger folder, a dictionary, or both")
        if rule not in RULES:
            raise ValueError(f"unknown merge rule {rule!r}; expected one of {', '.join(RULES)}")
        self.matcher = matcher
        self.tagger = tagger
        self.rule = rule

    @classmethod
    def load(
        cls, tagger: str | Path | None = None, dictionaries: Sequence[str | Path] = (),
        dictionary_format: str | None = None, rule: str = "tagger-first", device: str | None = None,
    ) -> Detector:
        """The tagger of folder ``tagger`` and a matcher over the names of ``dictionaries`` (files, or linker
        artifact folders: see :func:`dictionary_names`)."""
        if tagger is None and not dictionaries:
            raise ValueError("nothing to detect with: give a tagger folder, a dictionary, or both")
        matcher = DictionaryMatcher(
            name for d in dictionaries for name in dictionary_names(d, dictionary_format)
        ) if dictionaries else None
        return cls(matcher, Tagger.load(tagger, device) if tagger is not None else None, rule)

    @property
    def detectors(self) -> list[str]:
        return [d for d, on in (("tagger", self.tagger), ("matcher", self.matcher)) if on is not None]

    @property
    def merged(self) -> bool:
        """Whether spans of both detectors are merged (by :attr:`rule`)."""
        return self.tagger is not None and self.matcher is not None

    def detect(self, texts: Sequence[str], batch_size: int = 16) -> list[list[Span]]:
        """The spans of each text, sorted by start; the tagger reads the texts ``batch_size`` windows at a time."""
        tagged = self.tagger.predict(texts, batch_size) if self.tagger is not None else None
        matched = self.matcher.find_many(texts) if self.matcher is not None else None
        if tagged is None:
            assert matched is not None
            return matched
        if matched is None:
            return tagged
        knows = self.tagger.knows if self.tagger is not None else None
        return [merge(m, t, self.rule, tagger_knows=knows) for m, t in zip(matched, tagged, strict=True)]
