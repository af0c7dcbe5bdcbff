"""With CACHE_URL every process reads the one cache: what one web process counts (an API throttle's requests),
another sees. Two real processes, the real Redis of this test run."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest
from django.conf import settings
from django.core.cache.backends.redis import RedisCache

from tests.integration.conftest import PROJECT_ROOT
from webapp.env import envcache


def _cache_url() -> str:
    """This run's Redis (the broker's server), database 1, as a URL Django's Redis cache reads."""
    broker = settings.CELERY_BROKER_URL
    if broker.startswith("redis+socket://"):  # the embedded Redis listens on a unix socket
        return "unix://" + broker.removeprefix("redis+socket://") + "?db=1"
    return broker.rsplit("/", 1)[0] + "/1"


def _in_a_process(code: str, url: str) -> str:
    env = {**os.environ, "CACHE_URL": url, "DJANGO_SETTINGS_MODULE": "webapp.settings"}
    script = "import django; django.setup(); from django.core.cache import cache; " + code
    done = subprocess.run([sys.executable, "-c", script], cwd=PROJECT_ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_two_processes_share_one_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    url, key = _cache_url(), f"shared-cache-test:{uuid.uuid4().hex}"
    monkeypatch.setenv("CACHE_URL", url)
    config = envcache("CACHE_URL")["default"]
    here = RedisCache(config["LOCATION"], {"KEY_PREFIX": config["KEY_PREFIX"]})
    here.set(key, 41, 60)
    assert _in_a_process(f"print(cache.incr({key!r}))", url) == "42"
    assert here.get(key) == 42
    here.delete(key)

