"""Start the test provider (tests.oidc_provider.run) in a subprocess and stop it after the test."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Provider:
    issuer: str
    client_id: str
    client_secret: str
    log: Path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _rsa_key() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return pem.decode()


def _wait_until_up(process: subprocess.Popen[bytes], url: str, log: Path, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the test OpenID provider exited ({process.returncode}):\n{log.read_text()[-3000:]}")
        try:
            if requests.get(url, timeout=2).status_code == 200:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the test OpenID provider did not answer {url} within {timeout_s} s:\n{log.read_text()[-3000:]}")


@contextmanager
def running_provider(folder: Path, *, redirect_uri: str, post_logout_redirect_uri: str,
                     users: list[dict[str, Any]]) -> Iterator[Provider]:
    """A provider with these users (username, password, email, groups) and one confidential client, the workbench's,
    allowed to come back to ``redirect_uri`` and, after logout, to ``post_logout_redirect_uri``."""
    folder.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    issuer = f"http://127.0.0.1:{port}/o"
    client = {"client_id": "el-workbench", "client_secret": "workbench-secret-" + os.urandom(8).hex(),
              "redirect_uri": redirect_uri, "post_logout_redirect_uri": post_logout_redirect_uri}
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.oidc_provider.settings",
        "PYTHONPATH": str(ROOT),
        "OP_DATABASE": str(folder / "provider.sqlite3"),
        "OP_ISSUER": issuer,
        "OP_PORT": str(port),
        "OP_RSA_KEY": _rsa_key(),
        "OP_SETUP": json.dumps({"users": users, "client": client}),
    }
    log = folder / "provider.log"
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "tests.oidc_provider.run"], cwd=ROOT, env=env,
                                   stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_until_up(process, f"{issuer}/.well-known/openid-configuration", log)
        yield Provider(issuer=issuer, client_id=client["client_id"], client_secret=client["client_secret"], log=log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
