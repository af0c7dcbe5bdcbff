"""The documentation site (mkdocs.yml, docs/; issue #46) builds with ``mkdocs build --strict``: a broken link, a
missing screenshot, an anchor that is not there or a page left out of the nav is a warning, and a warning fails."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None,
    reason="mkdocs and mkdocs-material are not installed: they come with the dev extras (pip install -e '.[dev]')",
)
def test_the_docs_site_builds_strict_without_warnings(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    warnings = [line for line in result.stderr.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert result.returncode == 0 and not warnings, "mkdocs build --strict failed:\n" + "\n".join(warnings or [result.stderr])
    assert (tmp_path / "site" / "index.html").exists()
    assert (tmp_path / "site" / "openapi.yaml").exists(), "the static copy of the API schema is not in the site"


def test_every_page_of_docs_is_in_the_nav() -> None:
    # mkdocs only says "not included in the nav" at INFO level for some layouts: the nav is checked here too.
    config = (ROOT / "mkdocs.yml").read_text()
    pages = sorted(p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md"))
    missing = [page for page in pages if f": {page}" not in config]
    assert not missing, f"docs pages missing from mkdocs.yml's nav: {missing}"
