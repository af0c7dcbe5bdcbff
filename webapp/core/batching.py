"""Batches of a stream: imports write a transaction (or one COPY) per batch and never hold the whole file."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from typing import TypeVar

T = TypeVar("T")


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Lists of ``size`` items in order, the last one shorter (``itertools.batched`` from Python 3.12, as lists)."""
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch
