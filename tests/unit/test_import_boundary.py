"""linker/ is a pure ML package: it must never import the web framework, the task queue or the web app."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

LINKER = Path(__file__).resolve().parents[2] / "linker"
FORBIDDEN = {"django", "celery", "rest_framework", "webapp", "tasks"}


def _imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
            "import_module",
            "__import__",
        ):
            for arg in node.args[:1]:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    roots.add(arg.value.split(".")[0])
    return roots


MODULES = sorted(LINKER.rglob("*.py"))


def test_there_are_modules_to_check() -> None:
    assert any(p.name == "text.py" for p in MODULES)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(LINKER.parent)))
def test_module_imports_no_framework(path: Path) -> None:
    bad = _imported_roots(path) & FORBIDDEN
    assert not bad, f"{path} imports {sorted(bad)}"


def test_importing_linker_leaves_django_and_celery_unloaded() -> None:
    names = ["linker"] + [
        "linker." + ".".join(p.relative_to(LINKER).with_suffix("").parts)
        for p in MODULES
        if p.name != "__init__.py" and p.name != "__main__.py"
    ]
    code = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in {'django', 'celery', 'rest_framework', 'webapp', 'tasks'})\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=LINKER.parent, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", f"importing linker loaded {out.stdout.strip()}"
