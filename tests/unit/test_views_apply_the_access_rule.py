"""Every view that reads a project's kind of row applies the access rule (issue 43): read from the source, each
page, htmx fragment, API viewset method and export that names Collection, Document, Mention, Link, Decision,
Evaluation (and their kin) must also reach :mod:`webapp.projects.access` (``access.scope``, a ``check_*``,
``project_for``, ``visible_*``), directly or through a helper of its module, or a viewset's own ``get_object`` /
``get_queryset``. Views only admins reach (``admin_required``, ``IsAdmin``) see everything and are left out.

This is the quick half of the guard; the permission walk (tests/integration/test_route_walk.py) requests every
route as every kind of user and is the one that proves it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KINDS = frozenset({"Collection", "Document", "Mention", "Link", "Decision", "Evaluation", "MentionOutcome", "Workspace",
                   "Assignment", "Adjudication", "Project"})

# Views that read such rows without the rule, each with why that is right.
EXEMPT = {
    "webapp/api/filters.py MentionFilter.filter_origin":
        "a subquery of link origins that narrows the viewset's queryset, which the rule already scoped",
    "webapp/api/filters.py MentionFilter.filter_concept":
        "a subquery of linked concepts that narrows the viewset's queryset, which the rule already scoped",
    "webapp/api/filters.py DocumentFilter.filter_model_version":
        "a subquery of the mentions and links a model version wrote that narrows the viewset's queryset, which the rule "
        "already scoped",
    "webapp/api/filters.py DocumentFilter.filter_mention_status":
        "a subquery of mention statuses that narrows the viewset's queryset, which the rule already scoped",
    "webapp/api/scope.py ProjectScopeFilter.filter_queryset":
        "narrows what the rule kept further, to a project-scoped token's project",
    "webapp/people/views.py users": "the projects it lists are those the user manages (or all, for an admin)",
    "webapp/people/views.py member_add": "the projects it adds to are those the user manages (or all, for an admin)",
}


def _view_modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted((ROOT / "webapp").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if "/migrations/" in rel:
            continue
        if path.name == "views.py" or path.name.endswith("_views.py") or rel.startswith("webapp/api/"):
            yield rel, ast.parse(path.read_text())


def _rule_names(tree: ast.Module) -> set[str]:
    names = {"access"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "webapp.projects.access":
            names |= {alias.asname or alias.name for alias in node.names}
    return names


def _reads(node: ast.AST) -> bool:
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and n.attr == "objects" and isinstance(n.value, ast.Name) and n.value.id in KINDS:
            return True
        if (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "get_object_or_404" and n.args
                and isinstance(n.args[0], ast.Name) and n.args[0].id in KINDS):
            return True
    return False


def _applies(node: ast.AST, rule: set[str]) -> bool:
    return any((isinstance(n, ast.Name) and n.id in rule)
               or (isinstance(n, ast.Attribute) and n.attr in ("get_object", "get_queryset")) for n in ast.walk(node))


def _calls(node: ast.AST) -> set[str]:
    return {n.func.id for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}


def _admin_only(node: ast.FunctionDef | ast.ClassDef) -> bool:
    if isinstance(node, ast.FunctionDef):
        return any(isinstance(d, ast.Name) and d.id == "admin_required" for d in node.decorator_list)
    for statement in node.body:
        if isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "permission_classes"
                                                     for t in statement.targets):
            return ast.unparse(statement.value) == "[IsAdmin]"
    return False


def _views(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef]]:
    """Decorated module functions (pages, fragments) and classes' methods (viewsets, API views), but admins'."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.decorator_list and not _admin_only(node):
            yield node.name, node
        elif isinstance(node, ast.ClassDef) and not _admin_only(node):
            for method in node.body:
                if isinstance(method, ast.FunctionDef) and not _admin_only(method):
                    yield f"{node.name}.{method.name}", method


def _forgetful_views() -> list[str]:
    found = []
    for rel, tree in _view_modules():
        rule = _rule_names(tree)
        helpers = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        for name, view in _views(tree):
            reached, todo = [view], list(_calls(view))
            while todo:  # the view and the module's helpers it calls, and theirs
                helper = helpers.get(todo.pop())
                if helper is not None and helper not in reached:
                    reached.append(helper)
                    todo.extend(_calls(helper))
            if any(_reads(part) for part in reached) and not any(_applies(part, rule) for part in reached):
                found.append(f"{rel} {name}")
    return found


def test_every_view_that_reads_a_projects_rows_applies_the_access_rule() -> None:
    forgetful = sorted(set(_forgetful_views()) - set(EXEMPT))
    assert not forgetful, ("views that read collections, documents, mentions, decisions or evaluations without "
                           f"webapp.projects.access (scope them with access.scope or check the object): {forgetful}")


def test_the_exemptions_are_still_needed() -> None:
    stale = sorted(set(EXEMPT) - set(_forgetful_views()))
    assert not stale, f"exempted views that no longer read without the rule (drop them from EXEMPT): {stale}"
