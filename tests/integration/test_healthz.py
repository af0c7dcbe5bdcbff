"""/healthz is open to anonymous callers and reports the database, the broker and a worker."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.worker
def test_healthz_is_ok_when_a_worker_answers(client, celery_worker_process) -> None:  # type: ignore[no-untyped-def]
    response = client.get("/healthz")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "ok"
    assert set(body["checks"]) == {"database", "broker", "worker"}
    assert all(check["ok"] for check in body["checks"].values())


def test_healthz_names_the_failing_part(client, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from webapp.celery import app

    monkeypatch.setattr(app.control, "ping", lambda **kwargs: [])
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["worker"]["ok"] is False
    assert "no Celery worker answered" in body["checks"]["worker"]["error"]
