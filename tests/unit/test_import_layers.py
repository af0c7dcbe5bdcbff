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


# webapp's packages that wire the layers together and stand outside them (the contract's comment in pyproject.toml).
OUTSIDE_THE_LAYERS = {"webapp.demo"}


def test_every_package_of_webapp_is_a_layer() -> None:
    # A package left out of the layers would escape the contract unnoticed: a Django app or not (api and teamwork
    # have no apps.py).
    (layers,) = [c for c in _contracts() if c["type"] == "layers"]
    listed = {str(layer).strip("()") for layer in layers["layers"]}
    packages = {f"webapp.{p.parent.name}" for p in (ROOT / "webapp").glob("*/__init__.py")} - OUTSIDE_THE_LAYERS
    assert packages <= listed, f"packages missing from [tool.importlinter]'s layers: {sorted(packages - listed)}"
