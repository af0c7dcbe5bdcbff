"""A mention longer than MENTION_MAX_CHARS is refused by name at every door (the curation screen's add and widen,
the API, the five import formats), and none longer reaches a database error: the case-insensitive text index is a
hash index, which a btree row limit (2,704 bytes: a 3,000-character mention raised ProgramLimitExceeded) cannot hit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.db import connection
from rest_framework.test import APIClient

from linker.data import ParseError
from webapp.corpus.formats import FormatError
from webapp.corpus.formats.services import import_documents
from webapp.corpus.models import MENTION_MAX_CHARS, Collection, Document, Mention
from webapp.curation.models import Decision

pytestmark = pytest.mark.django_db

LONG = ("chronic relapsing inflammatory disease " * 80)[:3000]  # 3,000 characters
TEXT = f"{LONG} of the skin."
LIMIT = "is 3,000 characters long, over the 1,000-character limit for a mention"


@pytest.fixture
def document(db) -> Document:  # type: ignore[no-untyped-def]
    collection = Collection.objects.create(slug="long", title="Long")
    return Document.objects.create(collection=collection, external_id="1", text=TEXT)


def test_the_limit_is_far_above_real_mentions() -> None:
    assert MENTION_MAX_CHARS == 1_000  # NCBI Disease's longest gold mention is 80 characters, BC5CDR's 105


def test_adding_a_mention_too_long_is_refused_with_the_limit(bob_client, document: Document) -> None:  # type: ignore[no-untyped-def]
    response = bob_client.post(
        f"/curate/documents/{document.pk}/mentions/", {"start": 0, "end": 3000}, HTTP_HX_REQUEST="true"
    )
    toast = json.loads(response["HX-Trigger"])[
        "curation:toast"
    ]  # the screen shows it; the page stays as it is
    assert toast["error"] and LIMIT in toast["message"] and "“chronic relapsing" in toast["message"]
    assert not Mention.objects.exists()
    fits = bob_client.post(
        f"/curate/documents/{document.pk}/mentions/",
        {"start": 0, "end": MENTION_MAX_CHARS},
        HTTP_HX_REQUEST="true",
    )
    assert fits.status_code == 200 and Mention.objects.get().end == MENTION_MAX_CHARS


def test_widening_a_mention_too_far_is_refused_with_the_limit(bob_client, document: Document) -> None:  # type: ignore[no-untyped-def]
    mention = Mention.objects.create(document=document, start=0, end=7, text="chronic")
    response = bob_client.post(
        f"/curate/mentions/{mention.pk}/span/",
        {"start": 0, "end": 3000, "seen": mention.updated_at.isoformat()},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 400 and LIMIT in response.content.decode()
    mention.refresh_from_db()
    assert (mention.start, mention.end) == (0, 7) and not Decision.objects.exists()


def test_the_api_refuses_a_document_with_a_mention_too_long(alice) -> None:  # type: ignore[no-untyped-def]
    Collection.objects.create(slug="long", title="Long")
    client = APIClient()
    client.force_authenticate(alice)
    body = {"collection": "long", "external_id": "1", "text": TEXT, "mentions": [{"start": 0, "end": 3000}]}
    response = client.post("/api/documents/", body, format="json")
    assert response.status_code == 400
    detail = json.dumps(response.json(), ensure_ascii=False)
    assert "mentions[0]" in detail and LIMIT in detail and "index row" not in detail
    assert not Document.objects.exists()


def _pubtator(tmp_path: Path) -> Path:
    # Title "T", then the text: offsets count from the title's start ("T " is two characters).
    path = tmp_path / "long.txt"
    path.write_text(f"1|t|T\n1|a|{TEXT}\n1\t2\t3002\t{LONG}\tDisease\tD1\n\n", encoding="utf-8")
    return path


def _jsonl(tmp_path: Path) -> Path:
    path = tmp_path / "long.jsonl"
    path.write_text(
        json.dumps({"id": "1", "text": TEXT, "mentions": [{"start": 0, "end": 3000, "type": "Disease"}]})
        + "\n"
    )
    return path


def _bioc_xml(tmp_path: Path) -> Path:
    path = tmp_path / "long.xml"
    path.write_text(
        "<?xml version='1.0' encoding='utf-8'?><collection><source/><date/><key/>"
        f"<document><id>1</id><passage><offset>0</offset><text>{TEXT}</text>"
        f'<annotation id="A1"><infon key="type">Disease</infon><location offset="0" length="3000"/><text>{LONG}</text></annotation>'
        "</passage></document></collection>",
        encoding="utf-8",
    )
    return path


def _bioc_json(tmp_path: Path) -> Path:
    annotation = {
        "id": "A1",
        "infons": {"type": "Disease"},
        "text": LONG,
        "locations": [{"offset": 0, "length": 3000}],
    }
    passage = {
        "offset": 0,
        "infons": {},
        "text": TEXT,
        "sentences": [],
        "annotations": [annotation],
        "relations": [],
    }
    document = {"id": "1", "infons": {}, "passages": [passage], "relations": []}
    path = tmp_path / "long.json"
    path.write_text(json.dumps({"source": "", "date": "", "key": "", "infons": {}, "documents": [document]}))
    return path


def _brat(tmp_path: Path) -> Path:
    folder = tmp_path / "brat"
    folder.mkdir()
    (folder / "1.txt").write_text(TEXT, encoding="utf-8")
    (folder / "1.ann").write_text(f"T1\tDisease 0 3000\t{LONG}\n", encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    ("fmt", "write", "where"),
    [
        ("pubtator", _pubtator, "long.txt:3"),
        ("jsonl", _jsonl, "long.jsonl: line 1: mention 1"),
        ("bioc-xml", _bioc_xml, "long.xml: document 1 / annotation A1"),
        ("bioc-json", _bioc_json, "long.json: document 1 / annotation A1"),
        ("brat", _brat, "brat/1.ann: line 1"),
    ],
)
def test_every_import_format_refuses_a_mention_too_long_naming_it(
    tmp_path: Path, fmt: str, write, where: str
) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises((FormatError, ParseError)) as refused:
        import_documents(write(tmp_path), fmt, collection_slug="long")
    message = str(refused.value)
    assert where in message and "“chronic relapsing inflammatory disease" in message and LIMIT in message
    assert "index row" not in message
    assert not Document.objects.exists()


def test_no_length_of_mention_text_reaches_a_database_error(document: Document) -> None:
    # Below the application's limit: the hash index takes any text (a btree refused rows over 2,704 bytes).
    Mention.objects.create(document=document, start=0, end=3000, text=LONG)
    assert Mention.objects.filter(text__iexact=LONG.upper()).count() == 1


def test_the_identical_mentions_lookup_still_uses_the_index(document: Document) -> None:
    Mention.objects.create(document=document, start=0, end=7, text="chronic")
    query = Mention.objects.filter(text__iexact="CHRONIC")
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # a table this small is read whole otherwise
        sql, params = query.query.sql_with_params()
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "mention_text_upper_hash" in plan, plan
