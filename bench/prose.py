"""Words of prose per page (issue #46): the Models page, the run form, a dictionary, a collection and a project, as
an admin sees them, in this tree and in an older revision of it, on the same database.

What counts as prose. The page is rendered by Django's test client (logged in as an admin) and parsed; only the
``<main>`` element is read, and in it every visible text node counts except those inside:

- data: tables (``<table>``), the figures strip (``dl.stats``), lists of rows (``ul.member-list``, ``ul.hit-list``,
  the pagination), badges, identifiers set in ``.mono``, ``<code>`` and ``<kbd>``;
- navigation: ``<nav>`` (breadcrumbs) and the top bar, which is outside ``<main>``;
- controls: ``select``/``option``, ``button``, ``input``, ``textarea`` and their values, links styled as buttons
  (``.btn``);
- names: headings (``h1``-``h6``), ``legend``, the field-name spans (``span.label``), and a ``<label>``'s first four
  words (a label names its field; its words past the fourth describe it, and count);
- what a reader does not see: ``script``, ``style``, ``noscript``, ``.visually-hidden``, ``[hidden]``,
  ``aria-hidden="true"``, and on the run form the other methods' fields and notes (``[data-methods]`` without the
  checked method: the page's CSS hides them), so the run form is measured with its default method (BioSyn) chosen;
  ``run form, every method`` counts them all.

Everything else counts: paragraphs, list items, ``small`` and ``.help`` text, field help, ``details``/``summary``
bodies, captions, notices, empty-table messages. A word is a whitespace-separated token with a letter in it
(numbers-only strings, such as counts and dates, are not words).

Usage::

    python bench/prose.py seed                 # the fixture: demo dictionary and collection, an active index,
                                               # a project with two annotators, an admin (idempotent)
    python bench/prose.py measure              # this tree: JSON on stdout
    python bench/prose.py compare --before REV # REV in a worktree (/tmp/prose-before) and this tree, on the same
                                               # database; prints JSON and appends a dated entry to bench/RESULTS.md

The database is the one ``DATABASE_URL`` names; seed it first. Both trees must accept its schema (run the newer
tree's migrations; a revision whose models differ from the database cannot be measured on it).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ADMIN = "prose-admin"
PROJECT = "prose-demo"

SKIP_TAGS = {"table", "nav", "select", "option", "button", "input", "textarea", "script", "style", "noscript",
             "h1", "h2", "h3", "h4", "h5", "h6", "legend", "code", "kbd"}
SKIP_CLASSES = {"stats", "member-list", "hit-list", "pagination", "badge", "btn", "mono", "visually-hidden", "label",
                "breadcrumbs"}
LABEL_NAME_WORDS = 4


def _words(text: str) -> list[str]:
    return [token for token in text.split() if re.search(r"[^\W\d_]", token)]


def _skipped(element, checked_method: str | None) -> bool:  # type: ignore[no-untyped-def]
    if not isinstance(element.tag, str):  # comments, processing instructions
        return True
    if element.tag in SKIP_TAGS:
        return True
    if SKIP_CLASSES & set((element.get("class") or "").split()):
        return True
    if element.get("hidden") is not None or element.get("aria-hidden") == "true":
        return True
    methods = element.get("data-methods")
    return checked_method is not None and methods is not None and checked_method not in methods.split()


def _visible_text(element, checked_method: str | None) -> list[str]:  # type: ignore[no-untyped-def]
    """The element's text and its children's, less the skipped children (whose tails still count)."""
    parts = [element.text or ""]
    for child in element:
        if not _skipped(child, checked_method):
            parts.extend(_visible_text(child, checked_method))
        parts.append(child.tail or "")
    return parts


def prose_words(html: str, checked_method: str | None = None) -> list[str]:
    """The words of prose in the page's ``<main>`` (the rule in this module's docstring)."""
    from lxml import html as lxml_html

    main = lxml_html.fromstring(html).find(".//main")
    if main is None:
        raise ValueError("the page has no <main>")
    words: list[str] = []

    def walk(element) -> None:  # type: ignore[no-untyped-def]
        if _skipped(element, checked_method):
            return
        if element.tag == "label":  # its first words name the field; the rest describe it
            words.extend(_words(" ".join(_visible_text(element, checked_method)))[LABEL_NAME_WORDS:])
            return
        words.extend(_words(element.text or ""))
        for child in element:
            walk(child)
            words.extend(_words(child.tail or ""))

    walk(main)
    return words


def seed() -> None:
    """The fixture both trees are measured on (idempotent)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from webapp.corpus.models import Collection
    from webapp.demo.load import DEMO_COLLECTION, DEMO_DICTIONARY, load_demo
    from webapp.projects.models import Member, Project
    from webapp.projects.services.membership import add_member, create_project
    from webapp.teamwork.services.assignment import Mode, assign
    from webapp.training.services import activate_index, build_index, create_index_version
    from webapp.vocab.models import Dictionary

    users = get_user_model()
    admin, _ = users.objects.get_or_create(username=ADMIN, defaults={"is_staff": True})
    admin.groups.add(Group.objects.get_or_create(name="admin")[0])
    if not Dictionary.objects.filter(slug=DEMO_DICTIONARY).exists():
        load_demo(Path(tempfile.mkdtemp(prefix="prose-demo-")), log=lambda message: None)
        version = Dictionary.objects.get(slug=DEMO_DICTIONARY).latest_version()
        activate_index(build_index(create_index_version(version, None)).pk)
    if not Project.objects.filter(slug=PROJECT).exists():
        collection = Collection.objects.get(slug=DEMO_COLLECTION)
        project = create_project(by=admin, slug=PROJECT, title="Demo double annotation", collection=collection,
                                 description="Two annotators per abstract of the demo collection.")
        annotators = []
        for name in ("ann-a", "ann-b"):
            user, _ = users.objects.get_or_create(username=name)
            user.groups.add(Group.objects.get_or_create(name="curator")[0])
            add_member(project, user, Member.Role.ANNOTATOR, by=admin)
            annotators.append(user)
        assign(project, mode=Mode.PER_DOCUMENT, annotators=annotators, by=admin)


def pages() -> dict[str, str]:
    from webapp.demo.load import DEMO_COLLECTION, DEMO_DICTIONARY

    return {
        "Models": "/training/models/",
        "run form": "/training/runs/new/",
        "dictionary": f"/dictionaries/{DEMO_DICTIONARY}/",
        "collection": f"/collections/{DEMO_COLLECTION}/",
        "project": f"/projects/{PROJECT}/",
    }


def measure() -> dict[str, int]:
    """Words of prose per page in the tree this process imported ``webapp`` from."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.get(username=ADMIN))
    counts: dict[str, int] = {}
    for name, url in pages().items():
        response = client.get(url, HTTP_HOST="127.0.0.1")
        if response.status_code != 200:
            raise RuntimeError(f"{url}: {response.status_code}")
        html = response.content.decode()
        if name == "run form":
            counts[name] = len(prose_words(html, checked_method=_checked_method(html)))
            counts["run form, every method"] = len(prose_words(html))
        else:
            counts[name] = len(prose_words(html))
    return counts


def _checked_method(html: str) -> str:
    from lxml import html as lxml_html

    checked = lxml_html.fromstring(html).xpath('//input[@name="method"][@checked]/@value')
    return str(checked[0]) if checked else "biosyn"


def _setup(tree: Path) -> None:
    sys.path.insert(0, str(tree))  # before the editable install's /work/main: this tree's webapp and linker
    os.chdir(tree)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django

    django.setup()
    import webapp

    assert Path(webapp.__file__).resolve().is_relative_to(tree.resolve()), f"webapp imported from {webapp.__file__}"


def _measure_tree(tree: Path) -> dict[str, int]:
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "measure", "--tree", str(tree)],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _worktree(rev: str, path: Path) -> Path:
    if not path.exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), rev], check=True,
                       capture_output=True)
    return path


def compare(before_rev: str, worktree: Path, write: bool) -> dict[str, object]:
    before = _measure_tree(_worktree(before_rev, worktree))
    after = _measure_tree(ROOT)
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()
    rows = {name: {"before": before[name], "after": after[name],
                   "ratio": round(after[name] / before[name], 2) if before[name] else None} for name in after}
    result: dict[str, object] = {"before": before_rev, "after": f"{head} + working tree", "pages": rows}
    if write:
        _append_results(result)
    return result


def _append_results(result: dict[str, object]) -> None:
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"\n## {stamp} words of prose per page (issue #46; bench/prose.py)\n",
             f"Before = {result['before']}, after = {result['after']}; the demo dictionary and collection, an active "
             "tf-idf index and a two-annotator project, seen by an admin (`python bench/prose.py seed`, then "
             "`compare`). The rule (what counts as prose) is bench/prose.py's docstring.\n",
             "| page | before | after | after / before |", "|---|---:|---:|---:|"]
    pages = result["pages"]
    for name, row in pages.items():  # type: ignore[attr-defined]
        lines.append(f"| {name} | {row['before']} | {row['after']} | {row['ratio']} |")
    five = [row for name, row in pages.items() if name != "run form, every method"]  # type: ignore[attr-defined]
    before, after = sum(row["before"] for row in five), sum(row["after"] for row in five)
    lines.append(f"| **the five pages** | {before} | {after} | {round(after / before, 2)} |")
    with (ROOT / "bench" / "RESULTS.md").open("a", encoding="utf-8") as results:
        results.write("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("seed", "measure", "compare"))
    parser.add_argument("--tree", type=Path, default=ROOT, help="measure: the tree to import the app from")
    parser.add_argument("--before", default="81de42b", help="compare: the revision before the change")
    parser.add_argument("--worktree", type=Path, default=Path("/tmp/prose-before"))
    parser.add_argument("--no-write", action="store_true", help="compare: print only, leave bench/RESULTS.md")
    args = parser.parse_args()
    if args.command == "compare":
        print(json.dumps(compare(args.before, args.worktree, not args.no_write), indent=2))
        return
    _setup(args.tree if args.command == "measure" else ROOT)
    if args.command == "seed":
        seed()
    else:
        print(json.dumps(measure()))


if __name__ == "__main__":
    main()
