"""A tqdm progress bar on stderr for the import commands, fed by the importers' ``progress`` callback."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from tqdm import tqdm

from webapp.vocab.importers import Progress


@contextmanager
def progress_bar(unit: str, enabled: bool = True) -> Iterator[Progress]:
    """Yield a callback ``(done, total)`` that moves a bar; the bar hides itself where stderr is no terminal.

    The importers report absolute counts and an estimated total that may grow, so the bar is set, not
    incremented.
    """
    bar = tqdm(total=None, unit=f" {unit}", file=sys.stderr, disable=None if enabled else True, dynamic_ncols=True)

    def update(done: int, total: int | None) -> None:
        if total is not None and total != bar.total:
            bar.total = total
        bar.n = done
        bar.refresh()

    try:
        yield update
    finally:
        bar.close()
