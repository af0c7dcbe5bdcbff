"""Mention detection: find the spans of a text that name a concept, before linking them.

- :mod:`linker.detect.spans` the :class:`Span` every detector returns;
- :mod:`linker.detect.matcher` a dictionary matcher (Aho-Corasick over normalised names, longest match);
- :mod:`linker.detect.bio` BIO labels from spans and back, on words with exact character offsets;
- :mod:`linker.detect.tagger` a trained token classifier (BIO) on the project's transformer;
- :mod:`linker.detect.merge` the rule that merges the matcher's and the tagger's spans;
- :mod:`linker.detect.metrics` mention-level precision/recall/F1, exact and overlapping.
"""
