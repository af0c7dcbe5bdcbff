"""The imports page: admins see every job with its progress and refusal, the table polls itself only while
a job is queued or running, and nobody else sees it."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone
from pytest_django.asserts import assertContains, assertNotContains

from webapp.imports.models import ImportJob

pytestmark = pytest.mark.django_db

URL = reverse("import-jobs")
HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "import-jobs"}


@pytest.fixture
def running(alice) -> ImportJob:  # type: ignore[no-untyped-def]
    return ImportJob.objects.create(
        import_kind=ImportJob.Kind.DOCUMENTS, path="/data/ncbi/train.txt", params={"collection_slug": "ncbi-train"},
        state=ImportJob.State.RUNNING, progress=250, progress_total=593, started_at=timezone.now(), created_by=alice,
    )


@pytest.fixture
def refused(alice) -> ImportJob:  # type: ignore[no-untyped-def]
    return ImportJob.objects.create(
        import_kind=ImportJob.Kind.DICTIONARY, path="/data/medic.tsv", params={"dictionary_slug": "medic"},
        state=ImportJob.State.FAILED, error="/data/medic.tsv:4: expected 9 tab-separated columns, found 2",
        started_at=timezone.now(), finished_at=timezone.now(), created_by=alice,
    )


def test_admins_see_progress_and_the_refused_line(alice_client, running, refused) -> None:  # type: ignore[no-untyped-def]
    response = alice_client.get(URL)

    assertContains(response, 'id="import-jobs"')
    assertContains(response, '<progress max="100" value="42"')  # 250 of 593
    assertContains(response, "250 / 593")
    assertContains(response, "ncbi-train")
    assertContains(response, "/data/medic.tsv:4: expected 9 tab-separated columns, found 2")
    assertContains(response, 'hx-trigger="every 2s"')  # a job runs: the table polls
    assertContains(response, f'href="{URL}" aria-current="page">Imports</a>')


def test_the_poll_returns_the_table_alone_while_a_job_runs(alice_client, running) -> None:  # type: ignore[no-untyped-def]
    response = alice_client.get(URL, **HTMX)

    assert response.status_code == 200
    assertContains(response, 'hx-trigger="every 2s"')
    assertNotContains(response, "<html")


def test_the_poll_stops_once_no_job_runs(alice_client, running) -> None:  # type: ignore[no-untyped-def]
    ImportJob.objects.filter(pk=running.pk).update(state=ImportJob.State.SUCCEEDED, progress=593, report={"message": "imported 593 documents"})

    response = alice_client.get(URL, **HTMX)

    assert response.status_code == 286  # htmx: swap this last table in, stop polling
    assertContains(response, "imported 593 documents", status_code=286)
    assertNotContains(response, "hx-trigger", status_code=286)


def test_a_page_without_running_jobs_does_not_poll(alice_client, refused) -> None:  # type: ignore[no-untyped-def]
    response = alice_client.get(URL)
    assertContains(response, "Failed")
    assertNotContains(response, "hx-trigger")


def test_an_unknown_total_shows_a_count_without_a_bar(alice_client, running) -> None:  # type: ignore[no-untyped-def]
    ImportJob.objects.filter(pk=running.pk).update(progress_total=None)
    response = alice_client.get(URL)
    assertContains(response, "250 records")
    assertNotContains(response, "<progress")


def test_curators_get_403_and_no_link(bob_client) -> None:  # type: ignore[no-untyped-def]
    assert bob_client.get(URL).status_code == 403
    assertNotContains(bob_client.get(reverse("home")), URL)


def test_anonymous_visitors_are_sent_to_log_in(client) -> None:  # type: ignore[no-untyped-def]
    response = client.get(URL)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))
