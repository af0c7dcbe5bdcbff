"""The web server's metrics folder (webapp.gunicorn_conf): PROMETHEUS_MULTIPROC_DIR where given, else one per address
served under the data folder, emptied when the server starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from webapp import gunicorn_conf


def test_the_folder_is_the_variables_or_one_per_address(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("EMBEDDED_DATA_DIR", str(tmp_path))
    monkeypatch.delenv(gunicorn_conf.MULTIPROC_ENV, raising=False)
    assert gunicorn_conf.metrics_dir(["127.0.0.1:8000"]) == tmp_path / "metrics" / "127.0.0.1-8000"
    assert gunicorn_conf.metrics_dir(["unix:/run/wb.sock", "0.0.0.0:80"]) == tmp_path / "metrics" / "unix-run-wb.sock_0.0.0.0-80"
    monkeypatch.setenv(gunicorn_conf.MULTIPROC_ENV, str(tmp_path / "given"))
    assert gunicorn_conf.metrics_dir(["127.0.0.1:8000"]) == tmp_path / "given"


def test_the_folder_is_emptied(tmp_path: Path) -> None:
    folder = tmp_path / "metrics"
    folder.mkdir()
    (folder / "histogram_1.db").write_bytes(b"old")
    gunicorn_conf.prepare_metrics_dir(folder)
    assert folder.is_dir() and not any(folder.iterdir())
