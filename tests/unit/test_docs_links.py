"""Every page's "?" (issue #46, ``{% docs_link "page" "section" %}``) opens a page of docs/ and a heading on it:
a renamed heading or page fails here, not in front of a user. The anchors are Python-Markdown's (mkdocs.yml's toc)."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from webapp.core.templatetags.docs_links import docs_link, docs_url

ROOT = Path(__file__).resolve().parents[2]
TAG = re.compile(r'{%\s*docs_link\s+"([^"]+)"(?:\s+"([^"]*)")?')


def _slug(heading: str) -> str:
    """Python-Markdown's toc slugify: ASCII, no punctuation, lower case, spaces and hyphens to one hyphen."""
    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _anchors(page: Path) -> set[str]:
    in_code = False
    anchors = set()
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and (m := re.match(r"#{1,6}\s+(.+?)\s*#*$", line)):
            anchors.add(_slug(m.group(1)))
    return anchors


def _links() -> list[tuple[str, str, str]]:
    found = []
    for template in sorted((ROOT / "templates").rglob("*.html")):
        for page, section in TAG.findall(template.read_text()):
            found.append((template.relative_to(ROOT).as_posix(), page, section))
    return found


def test_the_five_pages_link_their_explanation() -> None:
    linked = {template for template, _, _ in _links()}
    for template in ("templates/training/model_list.html", "templates/training/run_start.html",
                     "templates/vocab/dictionary_detail.html", "templates/corpus/collection_detail.html",
                     "templates/projects/detail.html"):
        assert template in linked, f"{template} has no docs link"


def test_every_docs_link_names_a_page_and_a_heading_of_docs() -> None:
    broken = []
    for template, page, section in _links():
        path = ROOT / "docs" / f"{page}.md"
        if not path.exists():
            broken.append(f"{template}: docs/{page}.md does not exist")
        elif section and section not in _anchors(path):
            broken.append(f"{template}: docs/{page}.md has no heading #{section}")
    assert not broken, "\n".join(broken)


def test_the_link_goes_where_docs_url_says(settings) -> None:  # type: ignore[no-untyped-def]
    settings.DOCS_URL = "http://127.0.0.1:8001/"
    assert docs_url("admin-runs", "the-start-form") == "http://127.0.0.1:8001/admin-runs/#the-start-form"
    settings.DOCS_URL = "https://workbench.example.org/docs"
    html = docs_link("admin-indexes", "", "the Models page")
    assert 'href="https://workbench.example.org/docs/admin-indexes/"' in html
    assert 'aria-label="About the Models page, in the documentation"' in html and html.endswith(">?</a>")
