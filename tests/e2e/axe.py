"""axe-core for the browser tests (issue #46): installed from the npm registry at test time, never vendored.

The first run on a machine runs ``npm install`` of one pinned version into ``var/axe-core/<version>/`` (git-ignored;
``AXE_CORE_CACHE`` moves it); later runs read the file from there. The install goes to a temporary folder that is
renamed into place, so two test runs installing at once never see half a package.

Without npm (or without the registry) a developer's run skips the accessibility tests with the reason; under CI
(the ``CI`` variable, which CI services and ``.ci/run`` set) it fails, so a CI run never passes without them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest

from tests.e2e.conftest import PROJECT_ROOT

AXE_VERSION = "4.14.1"
BLOCKING = ("serious", "critical")  # impacts that fail a page; "minor" and "moderate" are reported only
# WCAG 2.x A and AA and axe's best practices; the experimental rules are left out.
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"]


def _cache() -> Path:
    return Path(os.environ.get("AXE_CORE_CACHE") or PROJECT_ROOT / "var" / "axe-core") / AXE_VERSION


def _missing(reason: str) -> NoReturn:
    message = f"axe-core {AXE_VERSION} is not installed and could not be: {reason}"
    if os.environ.get("CI", "").lower() not in ("", "0", "false"):
        pytest.fail(message + " (CI must run the accessibility tests: install Node.js and npm)", pytrace=False)
    pytest.skip(message + "; install Node.js and npm (with the npm registry reachable) to run the accessibility tests")


def axe_source() -> str:
    """The text of ``axe.min.js``, installing the pinned version with npm first if it is not cached."""
    script = _cache() / "node_modules" / "axe-core" / "axe.min.js"
    if script.is_file():
        return script.read_text()
    npm = shutil.which("npm")
    if npm is None:
        _missing("npm is not on PATH")
    _cache().parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{AXE_VERSION}-", dir=_cache().parent))
    try:
        done = subprocess.run(
            [npm, "install", "--no-save", "--no-package-lock", "--no-audit", "--no-fund", "--prefix", str(staging),
             f"axe-core@{AXE_VERSION}"],
            capture_output=True, text=True, timeout=300,
        )
        if done.returncode != 0 or not (staging / "node_modules" / "axe-core" / "axe.min.js").is_file():
            _missing(f"npm install failed: {(done.stderr or done.stdout).strip()[-800:]}")
        staging.chmod(0o755)  # mkdtemp's folder is its owner's only
        try:
            staging.rename(_cache())
        except OSError:  # another run installed it first: theirs is as good
            pass
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return script.read_text()


@dataclass(frozen=True)
class Violation:
    rule: str
    impact: str
    help: str
    targets: tuple[str, ...]

    def __str__(self) -> str:
        shown = ", ".join(self.targets[:5]) + (f" (+{len(self.targets) - 5} more)" if len(self.targets) > 5 else "")
        return f"{self.rule} [{self.impact}] {self.help}: {shown}"


def run_axe(page, source: str) -> list[Violation]:  # type: ignore[no-untyped-def]
    """Inject axe into ``page`` (unless already there) and return its violations of the WCAG A/AA tags."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(content=source)
    raw = page.evaluate(
        """async (tags) => {
          const result = await axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']});
          return result.violations.map(v => ({rule: v.id, impact: v.impact || 'minor', help: v.help,
                                              targets: v.nodes.map(n => n.target.join(' '))}));
        }""",
        TAGS,
    )
    return [Violation(v["rule"], v["impact"], v["help"], tuple(v["targets"])) for v in raw]


def summary(violations: list[Violation]) -> str:
    """Counts of failing elements by impact, e.g. ``critical 0, serious 2, moderate 1, minor 0``."""
    counts: Counter[str] = Counter()
    for violation in violations:
        counts[violation.impact] += len(violation.targets)
    return ", ".join(f"{impact} {counts[impact]}" for impact in ("critical", "serious", "moderate", "minor"))


def blocking(violations: list[Violation]) -> list[Violation]:
    return [v for v in violations if v.impact in BLOCKING]
