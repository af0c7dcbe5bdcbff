"""The documentation site, served by the app at ``/help/`` (issue #46): every page's "?" opens its section here, on
any deployment, with no docs server of its own and no internet. The site is the static folder ``mkdocs build``
writes (``scripts/docs build``; ``scripts/run`` builds it when it is missing; the Docker image builds it), read-only;
where it has not been built, the page says how to build it instead of a bare 404.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import SuspiciousFileOperation
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET
from django.views.static import serve


def site_dir() -> Path:
    """Where the built site is: mkdocs.yml's ``site_dir`` (``DOCS_SITE_DIR``, a setting only tests change)."""
    return Path(getattr(settings, "DOCS_SITE_DIR", Path(settings.BASE_DIR) / "site"))


def is_built() -> bool:
    return (site_dir() / "index.html").is_file()


@require_GET
@login_required
def help_page(request: HttpRequest, path: str = "") -> HttpResponse:
    """A file of the built site; a folder's address is its ``index.html`` (the site's directory URLs)."""
    if not is_built():
        return render(request, "core/help_not_built.html", {"site": site_dir()})
    if path == "" or path.endswith("/"):
        path += "index.html"
    try:
        return serve(request, path, document_root=str(site_dir()))
    except (Http404, SuspiciousFileOperation):  # a path out of the site ("../") is no page of it either
        raise Http404(f"The documentation has no page {path!r}.") from None


def build_site(quiet: bool = True) -> bool:
    """``mkdocs build`` into :func:`site_dir` when mkdocs is installed (the dev extra); False when it is not or
    the build fails (the app then keeps its "not built" page)."""
    try:
        import mkdocs  # noqa: F401
    except ImportError:
        return False
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--site-dir", str(site_dir()),
                           *(["-q"] if quiet else [])],
                          cwd=settings.BASE_DIR, capture_output=True, text=True, timeout=300)
    return done.returncode == 0 and is_built()
