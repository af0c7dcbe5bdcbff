"""POST /api/link: given spans or dictionary-matched mentions, ranked candidates from the active index."""

from __future__ import annotations

import io
import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from linker.cli import link_main
from linker.data import ConceptRecord, Synonym, iter_pubtator
from linker.linker import Linker
from webapp.linking.models import IndexVersion
from webapp.linking.registry import forget_all
from webapp.vocab.importers import import_dictionary
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, KnownType, KnownTypeVocabulary, Name

pytestmark = pytest.mark.django_db

RECORDS = [
    ConceptRecord("MESH:D001249", "Asthma", (Synonym("Bronchial Asthma"),)),
    ConceptRecord("MESH:D006973", "Hypertension", (Synonym("High blood pressure"),)),
    ConceptRecord("MESH:D003920", "Diabetes Mellitus", (Synonym("Diabetes"),)),
    ConceptRecord("MESH:D003924", "Diabetes Mellitus, Type 2", (Synonym("Non-insulin-dependent diabetes mellitus"),)),
]


@pytest.fixture(autouse=True)
def _fresh_registry() -> Iterator[None]:
    forget_all()
    yield
    forget_all()


def _activate(version: DictionaryVersion, folder: Path) -> IndexVersion:
    return IndexVersion.objects.create(
        dictionary=version.dictionary, dictionary_version=version, artifact_path=str(folder), state=IndexVersion.State.ACTIVE
    )


@pytest.fixture
def mini_index(tmp_path: Path) -> IndexVersion:
    d = Dictionary.objects.create(slug="mini", title="Mini")
    v = DictionaryVersion.objects.create(dictionary=d, release="r1", source_format="demo", checksum="l" * 64)
    vocabulary = KnownTypeVocabulary.objects.create(name="slims")
    respiratory = KnownType.objects.create(vocabulary=vocabulary, code="resp", label="Respiratory tract disease")
    for record in RECORDS:
        c = Concept.objects.create(version=v, concept_id=record.concept_id, preferred_name=record.preferred_name)
        for name in record.all_names():
            Name.objects.create(concept=c, text=name, normalized=name.lower())
        if record.concept_id == "MESH:D001249":
            c.known_types.add(respiratory)
    Linker.build(RECORDS, None).save(tmp_path / "index")
    return _activate(v, tmp_path / "index")


@pytest.fixture
def bob_api(bob) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(bob)
    return client


def test_given_spans_get_ranked_candidates_with_names_and_types(bob_api: APIClient, mini_index: IndexVersion) -> None:
    text = "Bronchial asthma and high blood pressure."
    response = bob_api.post("/api/link", {"dictionary": "mini", "text": text, "mentions": [{"start": 0, "end": 16}], "k": 3}, format="json")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["dictionary"], body["release"], body["index_version"]) == ("mini", "r1", mini_index.pk)
    assert body["model_version"] == mini_index.label
    (mention,) = body["mentions"]
    assert (mention["start"], mention["end"], mention["text"], mention["source"]) == (0, 16, "Bronchial asthma", "given")
    top = mention["candidates"][0]
    assert (top["rank"], top["concept_id"], top["preferred_name"], top["known_types"]) == (1, "MESH:D001249", "Asthma", ["Respiratory tract disease"])
    assert top["dense"] is None and top["sparse"] > 0  # sparse-only index: no dense score (and no NaN in JSON)
    assert len(mention["candidates"]) <= 3
    # No re-ranker, no calibration: the retriever ranked, nothing typed, no confidence.
    assert (mention["ranked_by"], mention["predicted_types"], mention["latent_type"]) == ("retriever", [], None)
    assert (mention["confidence"], mention["nil"]) == (None, None)
    assert (top["latent_type"], top["type_conflict"], top["homonyms"]) == (None, False, [])


def test_plain_text_mentions_come_from_the_dictionary_matcher(bob_api: APIClient, mini_index: IndexVersion) -> None:
    text = "Patients with non-insulin-dependent Diabetes Mellitus and hypertension; diabetes."
    response = bob_api.post("/api/link", {"dictionary": "mini", "text": text}, format="json")
    assert response.status_code == 200
    found = [(m["text"], m["source"], m["candidates"][0]["concept_id"]) for m in response.json()["mentions"]]
    assert found == [
        ("non-insulin-dependent Diabetes Mellitus", "detected", "MESH:D003924"),
        ("hypertension", "detected", "MESH:D006973"),
        ("diabetes", "detected", "MESH:D003920"),
    ]


def test_no_active_index_is_503_with_what_to_do(bob_api: APIClient) -> None:
    Dictionary.objects.create(slug="bare", title="Bare")
    response = bob_api.post("/api/link", {"dictionary": "bare", "text": "asthma"}, format="json")
    assert response.status_code == 503
    assert "build_index --dictionary bare --activate" in response.json()["detail"]


def test_unknown_dictionary_and_bad_spans_are_400(bob_api: APIClient, mini_index: IndexVersion) -> None:
    assert bob_api.post("/api/link", {"dictionary": "nope", "text": "x"}, format="json").status_code == 400
    response = bob_api.post("/api/link", {"dictionary": "mini", "text": "asthma", "mentions": [{"start": 2, "end": 60}]}, format="json")
    assert response.status_code == 400
    assert "outside the text" in json.dumps(response.json())


def test_link_requests_are_throttled_per_user(bob_api: APIClient, mini_index: IndexVersion, monkeypatch: pytest.MonkeyPatch) -> None:
    from django.core.cache import cache
    from rest_framework.throttling import ScopedRateThrottle

    monkeypatch.setattr(ScopedRateThrottle, "THROTTLE_RATES", {"link": "2/min"})
    cache.clear()
    body = {"dictionary": "mini", "text": "asthma"}
    codes = [bob_api.post("/api/link", body, format="json").status_code for _ in range(3)]
    cache.clear()
    assert codes == [200, 200, 429]


@pytest.mark.shared_data
@pytest.mark.slow
def test_link_endpoint_matches_the_linker_cli_on_ncbi_dev(shared_data: Path, tmp_path: Path, bob_api: APIClient) -> None:
    """Acceptance: the same top candidate as ``python -m linker link`` for ~100 NCBI dev mentions."""
    medic = shared_data / "medic" / "medic_06Jul2012.txt"
    dev = shared_data / "ncbi-disease" / "NCBIdevelopset_corpus.txt"
    if not (medic.is_file() and dev.is_file()):
        pytest.skip("medic_06Jul2012.txt or the NCBI dev set is absent")
    import_dictionary(medic, dictionary_slug="medic2012")
    version = Dictionary.objects.get(slug="medic2012").latest_version()
    assert version is not None
    from linker.cli import build_index_main

    build_index_main(medic, tmp_path / "index", sparse_only=True)
    _activate(version, tmp_path / "index")

    docs = list(iter_pubtator(dev))
    random.Random(7).shuffle(docs)
    sample, total = [], 0
    for doc in docs:
        sample.append(doc)
        total += len(doc.mentions)
        if total >= 100:
            break
    # The CLI on the same documents (written back as a PubTator file), with the same artifact.
    subset = tmp_path / "subset.txt"
    subset.write_text("".join(
        f"{d.pmid}|t|{d.title}\n{d.pmid}|a|{d.abstract}\n" + "".join(f"{d.pmid}\t{m.start}\t{m.end}\t{m.text}\t{m.mention_type}\t{m.ids_raw}\n" for m in d.mentions) + "\n"
        for d in sample
    ))
    out = io.StringIO()
    link_main(tmp_path / "index", [subset], out, k=5)
    cli = {(r["pmid"], r["start"], r["end"]): r["parts"][0][0]["concept_id"] for r in map(json.loads, out.getvalue().splitlines())}

    api: dict[tuple[str, int, int], str] = {}
    for doc in sample:
        spans = [{"start": m.start, "end": m.end} for m in doc.mentions]
        response = bob_api.post("/api/link", {"dictionary": "medic2012", "text": doc.text, "mentions": spans, "k": 5}, format="json")
        assert response.status_code == 200, response.json()
        for m in response.json()["mentions"]:
            top = next(c for c in m["candidates"] if c["part"] == 0)
            api[(doc.pmid, m["start"], m["end"])] = top["concept_id"]
    assert len(api) == len(cli) >= 100
    assert api == cli


def test_a_curator_synonym_recorded_by_another_process_is_found_by_api_link(
    bob_api: APIClient, mini_index: IndexVersion, monkeypatch: pytest.MonkeyPatch
) -> None:
    """/api/link reads the same live index as the curation panel: curator synonyms count without a rebuild."""
    from linker.text import normalize
    from webapp.linking import registry

    monkeypatch.setattr(registry, "RECHECK_SECONDS", 0.0)
    text = "Wheezy lungs at night."
    body = {"dictionary": "mini", "text": text, "mentions": [{"start": 0, "end": 12}], "k": 3}
    assert bob_api.post("/api/link", body, format="json").status_code == 200  # the index is loaded before the synonym
    asthma = Concept.objects.get(concept_id="MESH:D001249")
    # Written straight to the database, as a decision in another web process or worker would.
    Name.objects.create(concept=asthma, text="Wheezy lungs", normalized=normalize("Wheezy lungs"), source=Name.Source.CURATOR)
    (mention,) = bob_api.post("/api/link", body, format="json").json()["mentions"]
    top = mention["candidates"][0]
    assert (top["concept_id"], top["matched_name"]) == ("MESH:D001249", "Wheezy lungs")
