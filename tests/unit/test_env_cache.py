"""CACHE_URL: empty keeps a cache per process; a redis:// URL gives every host one cache; anything else stops start-up
naming the variable."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from webapp.env import envcache


def test_without_a_url_each_process_keeps_its_own_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CACHE_URL", raising=False)
    assert envcache("CACHE_URL")["default"]["BACKEND"] == "django.core.cache.backends.locmem.LocMemCache"


def test_a_redis_url_is_one_cache_every_host_shares(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CACHE_URL", "redis://cache.internal:6379/1")
    assert envcache("CACHE_URL") == {"default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://cache.internal:6379/1",
        "KEY_PREFIX": "workbench"}}


def test_another_url_is_refused_with_the_variable_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CACHE_URL", "memcached://cache.internal:11211")
    with pytest.raises(ImproperlyConfigured, match=r"CACHE_URL='memcached://cache.internal:11211': give a redis://"):
        envcache("CACHE_URL")
