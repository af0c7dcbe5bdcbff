"""The layers contract in pyproject.toml ([tool.importlinter], README "Layers") holds: no app imports a layer above
it (function-level imports included), and linker imports neither Django, Celery nor the web app. A new upward import
fails here with import-linter's report naming the importing line."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _contracts() -> list[dict[str, object]]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)["tool"]["importlinter"]["contracts"]


def test_lint_imports_keeps_every_contract() -> None:
    # The venv's own executable (next to this interpreter), without the cache: a stale cache must not hide an import.
    lint_imports = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run(
        [str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, (
        f"lint-imports found imports the contract forbids:\n{result.stdout}\n{result.stderr}"
    )


def test_every_django_app_of_webapp_is_a_layer() -> None:
    # An app left out of the layers would escape the contract unnoticed.
    (layers,) = [c for c in _contracts() if c["type"] == "layers"]
    listed = {str(layer).strip("()") for layer in layers["layers"]}
    apps = {f"webapp.{p.parent.name}" for p in (ROOT / "webapp").glob("*/apps.py")}
    assert apps <= listed, f"apps missing from [tool.importlinter]'s layers: {sorted(apps - listed)}"
