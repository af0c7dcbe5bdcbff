"""Typed environment helpers that fail loudly: a bad value stops start-up with a message naming the variable."""

from __future__ import annotations

import os
import re

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}
_DEVICE = re.compile(r"(auto|cpu|cuda(:\d+)?)\Z")


def envstr(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def envbool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use one of 1/0, true/false, yes/no, on/off)")


def envint(name: str, default: int, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}")
    return value


def envlist(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def envdevice(name: str, default: str) -> str:
    """A torch device the linker computes on (``auto``, ``cpu``, ``cuda``, ``cuda:N``); whether this machine has it is
    checked where it is used (linker.device.parse_device), so a web host without a GPU may carry a worker's value."""
    raw = os.environ.get(name)
    value = (raw or "").strip().lower()
    if not value:
        return default
    if not _DEVICE.match(value):
        raise ImproperlyConfigured(f"{name}={raw!r} is not a device (use auto, cpu, cuda or cuda:N)")
    return value


def envchoice(name: str, default: str, choices: tuple[str, ...]) -> str:
    """One of ``choices`` (case-insensitive); empty: ``default``."""
    value = os.environ.get(name, "").strip().lower() or default
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} is not one of {', '.join(choices)}")
    return value


def envcache(name: str) -> dict[str, dict[str, str]]:
    """Django's CACHES from a ``redis://`` URL: one cache every web host shares (API throttles count per deployment,
    not per process). Empty: each process keeps its own in memory, which is right for one host."""
    url = os.environ.get(name, "").strip()
    if not url:
        return {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise ImproperlyConfigured(f"{name}={url!r}: give a redis:// URL (or leave it empty for a per-process cache)")
    return {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url,
                        "KEY_PREFIX": "workbench"}}
