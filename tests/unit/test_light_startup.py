"""A Django process that does not link or train stays small (issue #45): ``django.setup()`` (what every
manage.py command, worker and web process runs first), loading the URLconf (every view) and ``manage.py check``
import no torch, transformers, faiss, scikit-learn or SciPy: those are imported where a linker is loaded or
trained. The training methods' choices, read while the models load, come from a light table
(:mod:`linker.methods.names`) that is checked here against the recipe's.

Each check runs in a fresh interpreter: this test process has torch loaded already."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from linker import recipe
from linker.methods.names import BUILT_IN

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "transformers", "faiss", "sklearn", "scipy")


def _after_setup(code: str) -> str:
    """What a fresh interpreter prints running ``code`` after ``django.setup()``."""
    script = (
        "import os, sys, django\n"
        "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'webapp.settings')\n"
        "django.setup()\n" + code
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "webapp.settings"}
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_django_setup_imports_no_torch() -> None:
    loaded = _after_setup(f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    assert loaded == "[]"


def test_the_urls_and_the_system_checks_import_no_torch() -> None:
    loaded = _after_setup(
        "import webapp.urls\n"
        "from django.urls import resolve\n"
        "resolve('/')\n"
        "from django.core.management import call_command\n"
        "call_command('check', verbosity=0)\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    assert loaded.splitlines()[-1] == "[]"


def test_the_training_run_choices_at_start_up_are_the_recipes() -> None:
    # Read before linker.recipe is loaded (the light table), then after it (the recipe's own table): the same.
    printed = _after_setup(
        "from webapp.training.models import TrainingRun\n"
        "before = TrainingRun.Method.choices\n"
        "print('linker.recipe' in sys.modules)\n"
        "from linker import recipe\n"
        "print(TrainingRun.Method.choices == before)\n"
    )
    assert printed.splitlines() == ["False", "True"]


def test_the_light_method_table_is_the_recipes_built_in_one() -> None:
    assert [(m.name, m.label) for m in recipe.METHODS.values()][: len(BUILT_IN)] == list(BUILT_IN)
