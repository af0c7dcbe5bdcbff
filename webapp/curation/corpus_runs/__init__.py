"""Corpus runs: detect and link over a collection (or part of it), chunk by chunk, as jobs (docs/corpus-runs.md)."""
