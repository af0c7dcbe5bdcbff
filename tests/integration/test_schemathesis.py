"""Acceptance 2: schemathesis against the OpenAPI schema finds no server error and no schema violation.

Runs in-process against the WSGI application (no server, the test database), authenticated as an admin so
every operation is reachable, over a small world (a dictionary with an active sparse index, a collection,
a document with a mention and links). Bounded: a fixed number of examples per operation, no shrinking
beyond a few seconds, so it finishes in a couple of minutes on two cores.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from django.core import signals
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from linker.data import ConceptRecord, Synonym
from linker.linker import Linker
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.imports.models import ImportJob
from webapp.linking.models import IndexVersion
from webapp.linking.registry import forget_all
from webapp.people.tokens import issue_token
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, HierarchyEdge, Name

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

EXAMPLES_PER_OPERATION = int(os.environ.get("SCHEMATHESIS_EXAMPLES", "15"))
# Valid inputs and invalid ones (wrong types, missing fields, out-of-range values), as the CLI generates.
MODES = [GenerationMode.POSITIVE, GenerationMode.NEGATIVE]
# Checks of the acceptance: no 5xx, documented status codes and content types, bodies and headers
# that match their schema. (Not "positive data acceptance": a schema-valid slug that names nothing is a 404.)
CHECKS = [
    schemathesis.checks.not_a_server_error,
    schemathesis.checks.status_code_conformance,
    schemathesis.checks.content_type_conformance,
    schemathesis.checks.response_schema_conformance,
    schemathesis.checks.response_headers_conformance,
    # What the schema forbids is refused (4xx), not answered 2xx with defaults: a page given as a word, a field the
    # schema types as a slug given empty, a multipart body of a JSON-only operation.
    schemathesis.checks.negative_data_rejection,
]


@pytest.fixture
def _keep_the_test_connection() -> Iterator[None]:
    """Requests go through the real WSGI handler, whose request signals would close the connection that
    holds the test's transaction; Django's own test client disconnects them the same way."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def world(db, tmp_path: Path, settings, _keep_the_test_connection) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """An admin token, over data every operation can find."""
    from django.contrib.auth.models import Group, User

    settings.ARTIFACT_ROOT = tmp_path / "artifacts"  # dictionary uploads land here
    admin = User.objects.create_user("fuzz-admin", password="x" * 20)
    admin.groups.add(Group.objects.get(name="admin"))
    d = Dictionary.objects.create(slug="mini", title="Mini")
    v = DictionaryVersion.objects.create(dictionary=d, release="1", source_format="demo", checksum="s" * 64)
    records = [ConceptRecord("MESH:D001249", "Asthma", (Synonym("Bronchial asthma"),)), ConceptRecord("MESH:D012140", "Respiratory Tract Diseases")]
    concepts = {}
    for record in records:
        concepts[record.concept_id] = c = Concept.objects.create(version=v, concept_id=record.concept_id, preferred_name=record.preferred_name)
        for name in record.all_names():
            Name.objects.create(concept=c, text=name, normalized=name.lower())
    HierarchyEdge.objects.create(version=v, child=concepts["MESH:D001249"], parent=concepts["MESH:D012140"])
    Linker.build(records, None).save(tmp_path / "index")
    IndexVersion.objects.create(dictionary=d, dictionary_version=v, artifact_path=str(tmp_path / "index"), state="active")
    collection = Collection.objects.create(slug="c", title="C", dictionary=d)
    document = Document.objects.create(collection=collection, external_id="1", title="Asthma", text="Asthma in adults.")
    mention = Mention.objects.create(document=document, start=0, end=6, text="Asthma", status=Mention.Status.SUGGESTED)
    Link.objects.create(mention=mention, concept=concepts["MESH:D001249"], concept_ref="D001249", origin=Link.Origin.GOLD)
    Link.objects.create(mention=mention, concept=concepts["MESH:D001249"], concept_ref="MESH:D001249", origin=Link.Origin.MODEL, rank=1, score=1.0)
    forget_all()
    yield issue_token(admin, "schemathesis").key
    forget_all()


def _success_calls(world_token: str) -> list[tuple[str, str, dict[str, Any] | None]]:
    """(method, path, JSON body): one call per operation that succeeds on the world's data."""
    document = Document.objects.get(external_id="1")
    mention = document.mentions.get()
    link = mention.links.first()
    job = ImportJob.objects.create(import_kind="dictionary", path="/x", params={})
    assert link is not None
    return [
        ("GET", "/api/dictionaries/", None),
        ("GET", "/api/dictionaries/mini/", None),
        ("GET", "/api/concepts/?q=asthma&dictionary=mini", None),
        ("GET", "/api/concepts/MESH:D001249/", None),
        ("GET", "/api/collections/", None),
        ("POST", "/api/collections/", {"slug": "new", "title": "New", "dictionary": "mini"}),
        ("GET", "/api/collections/c/", None),
        ("GET", "/api/collections/c/export/?as=jsonl&suggestions=true", None),
        ("GET", "/api/collections/c/documents/?page_size=1&detection_state=none", None),
        ("GET", "/api/collections/c/documents/stream/?as=pubtator&changed_since=2020-01-01T00:00:00Z", None),
        ("GET", "/api/documents/?collection=c", None),
        ("POST", "/api/documents/", {"collection": "c", "external_id": "2", "text": "Gout.", "mentions": [{"start": 0, "end": 4, "links": [{"nil": True}]}]}),
        ("GET", f"/api/documents/{document.pk}/", None),
        ("GET", f"/api/documents/{document.pk}/export/?as=bioc-json", None),
        ("GET", "/api/mentions/?origin=gold&concept=MESH:D001249", None),
        ("GET", f"/api/mentions/{mention.pk}/", None),
        ("POST", f"/api/mentions/{mention.pk}/decision/", {"action": "accept", "updated_at": mention.updated_at.isoformat()}),
        ("GET", "/api/links/?origin=curator", None),
        ("GET", f"/api/links/{link.pk}/", None),
        ("POST", "/api/link", {"dictionary": "mini", "text": "Bronchial asthma in adults."}),
        ("POST", "/api/link", {"dictionary": "mini", "text": "Bronchial asthma.", "mentions": [{"start": 0, "end": 16}], "k": 2}),
        ("GET", "/api/imports/", None),
        ("GET", f"/api/imports/{job.pk}/", None),
    ]


def test_every_success_answer_matches_its_schema(world: str) -> None:
    """Fuzzed inputs rarely name existing objects; these calls do, so the 2xx bodies are checked too."""
    from werkzeug.test import Client

    from webapp.wsgi import application

    headers = {"Authorization": f"Token {world}"}
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", application, headers=headers)
    client = Client(application)
    for method, path, body in _success_calls(world):
        response = client.open(path, method=method, json=body, headers=headers)
        assert 200 <= response.status_code < 300, (method, path, response.status_code, response.get_data(as_text=True)[:500])
        operation = schema.find_operation_by_path(method, path.split("?")[0])
        assert operation is not None, (method, path)
        operation.validate_response(response)


def form_cannot_say(case: schemathesis.Case) -> bool:
    """A negative case a form (multipart) body cannot express: an empty array for a field is sent as no field at
    all, which the schema allows, so no server could tell it from a valid request."""
    return bool((case.media_type or "").startswith("multipart/") and isinstance(case.body, dict)
                and any(value == [] for value in case.body.values()))


def test_no_server_errors_and_no_schema_violations(world: str) -> None:
    from webapp.wsgi import application

    headers = {"Authorization": f"Token {world}"}
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", application, headers=headers)
    failures: list[str] = []
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 24

    for operation, mode in itertools.product(operations, MODES):
        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            database=None,
            derandomize=True,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        def exercise(case: schemathesis.Case) -> None:
            if form_cannot_say(case):
                return
            case.call_and_validate(headers=headers, checks=CHECKS)

        try:
            exercise()
        except Unsatisfiable:
            continue  # no invalid input exists (a path slug with no constraint to break): nothing to test
        except (Exception, BaseExceptionGroup) as exc:  # every operation's failures (a FailureGroup), reported together
            failures.append(f"{operation.label} ({mode.value} data): {exc}"[:3000])
    assert not failures, "\n\n".join(failures)
