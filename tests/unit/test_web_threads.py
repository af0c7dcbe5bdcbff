"""The web process computes on LINKER_WEB_THREADS threads (torch, BLAS, OpenMP); batch processes keep every core."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from linker.device import limit_threads

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import json, torch, faiss
from threadpoolctl import threadpool_info
before = torch.get_num_threads()
import webapp.wsgi  # what gunicorn and runserver load
print(json.dumps({"before": before, "torch": torch.get_num_threads(), "faiss": faiss.omp_get_max_threads(),
                  "pools": sorted({p["num_threads"] for p in threadpool_info()})}))
"""


def _probe(**env: str) -> dict[str, object]:
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "webapp.settings", **env}
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: every pool has one thread anyway")
def test_the_web_process_computes_on_one_thread_by_default_and_as_many_as_configured() -> None:
    default = _probe()
    assert default["before"] >= 2  # a plain process uses the cores
    assert default["torch"] == 1 and default["faiss"] == 1 and default["pools"] == [1]
    assert _probe(LINKER_WEB_THREADS="2")["torch"] == 2


def test_no_threads_at_all_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one compute thread"):
        limit_threads(0)
