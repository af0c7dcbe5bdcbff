"""The layers import downwards only: tasks -> webapp -> linker, and no module takes part in an import loop.

The web app queues background work by task name (``webapp.core.queue.enqueue``) and never imports ``tasks/``;
the tasks call the web app's services. Every import counts, the lazy ones inside functions too: a lazy import
hides a loop from Python, not from the reader.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("webapp", "tasks", "linker")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" not in path.parts:
                out[_module_name(path)] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Project modules that ``name`` imports, anywhere in its body."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # ``from package import module`` imports the module; ``from module import name`` the module.
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def test_the_graph_sees_the_packages() -> None:
    assert "webapp.core.queue" in GRAPH and "tasks.training" in GRAPH and "linker.linker" in GRAPH


@pytest.mark.parametrize("name", sorted(n for n in GRAPH if n.startswith("webapp")))
def test_webapp_never_imports_tasks(name: str) -> None:
    bad = sorted(t for t in GRAPH[name] if t.split(".")[0] == "tasks")
    assert not bad, f"{name} imports {bad}: queue the task by name with webapp.core.queue.enqueue"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def test_no_import_loops() -> None:
    # A package's __init__ importing its own submodules is not a loop between responsibilities.
    graph = {n: {t for t in ts if not (t.startswith(n + ".") and MODULES[n].name == "__init__.py")} for n, ts in GRAPH.items()}
    graph = {n: {t for t in ts if not (n.startswith(t + ".") and MODULES[t].name == "__init__.py")} for n, ts in graph.items()}
    assert _cycles(graph) == []


def test_cycle_finder_finds_a_loop() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
