"""The browser pages, as bob the curator sees them, on a tiny knowledge base written for these tests.

Hierarchy: Diseases (MESH:C) > Neoplasms (MESH:D009369) > Breast Neoplasms (MESH:D001943)
                            > Neoplasms by Site (MESH:D009371) > Breast Neoplasms        (two paths to the root)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from pytest_django.asserts import assertContains, assertNotContains

from linker.text import normalize
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.vocab.models import (
    Concept,
    Dictionary,
    DictionaryVersion,
    HierarchyEdge,
    KnownType,
    KnownTypeVocabulary,
    Name,
)

pytestmark = pytest.mark.django_db

TITLE = "Breast cancer in <b>women</b>."
TEXT = TITLE + " Familial breast cancer and ovarian cancer were studied."


@dataclass
class KB:
    dictionary: Dictionary
    version: DictionaryVersion
    old_version: DictionaryVersion
    root: Concept
    neoplasms: Concept
    by_site: Concept
    breast: Concept
    collection: Collection
    doc: Document
    doc2: Document
    breast_mention: Mention  # "Breast cancer" in the title, accepted, gold MESH:D001943
    familial: Mention  # "Familial breast cancer", pending, gold MESH:D001943
    inner: Mention  # "breast cancer" nested in it, suggested, no gold link
    ovarian: Mention  # "ovarian cancer", NIL decision, gold id that the dictionary lacks


def _concept(version: DictionaryVersion, cid: str, name: str, *synonyms: tuple[str, str, str], **extra: object) -> Concept:
    concept = Concept.objects.create(version=version, concept_id=cid, preferred_name=name, **extra)
    Name.objects.create(concept=concept, text=name, normalized=normalize(name), is_preferred=True)
    for text, source, scope in synonyms:
        Name.objects.create(concept=concept, text=text, normalized=normalize(text), source=source, scope=scope)
    return concept


def _mention(doc: Document, text: str, occurrence: int = 0, **fields: object) -> Mention:
    start = [m.start() for m in re.finditer(re.escape(text), doc.text)][occurrence]
    return Mention.objects.create(document=doc, start=start, end=start + len(text), text=text, **fields)


@pytest.fixture
def kb(db) -> KB:  # type: ignore[no-untyped-def]
    dictionary = Dictionary.objects.create(slug="medic", title="MEDIC", description="CTD's merged disease vocabulary.")
    old = DictionaryVersion.objects.create(dictionary=dictionary, release="2011", source_format="medic", checksum="a" * 64)
    version = DictionaryVersion.objects.create(dictionary=dictionary, release="2024-01", source_format="medic", checksum="b" * 64)
    _concept(old, "MESH:D001943", "Breast Neoplasms (2011)")
    root = _concept(version, "MESH:C", "Diseases")
    neoplasms = _concept(version, "MESH:D009369", "Neoplasms", ("tumour", "dictionary", "EXACT"))
    by_site = _concept(version, "MESH:D009371", "Neoplasms by Site")
    breast = _concept(
        version, "MESH:D001943", "Breast Neoplasms",
        ("breast cancer", "dictionary", "EXACT"),
        ("mammary carcinoma", "curator", ""),
        ("familial breast cancer", "training", ""),
        alt_ids=["DO:1612"], definition="Tumors or cancer of the human breast.",
    )
    for child, parent in [(neoplasms, root), (by_site, neoplasms), (breast, neoplasms), (breast, by_site)]:
        HierarchyEdge.objects.create(version=version, child=child, parent=parent)
    slim = KnownTypeVocabulary.objects.create(name="MEDIC slim")
    breast.known_types.add(KnownType.objects.create(vocabulary=slim, code="cancer", label="Cancer"))

    collection = Collection.objects.create(slug="ncbi-dev", title="NCBI Disease dev", dictionary=dictionary, has_gold=True)
    doc = Document.objects.create(collection=collection, external_id="10001", title=TITLE, text=TEXT)
    doc2 = Document.objects.create(collection=collection, external_id="10002", title="Second", text="Second. Nothing here.")
    breast_mention = _mention(doc, "Breast cancer", status="accepted", mention_type="SpecificDisease")
    familial = _mention(doc, "Familial breast cancer", mention_type="SpecificDisease")
    inner = _mention(doc, "breast cancer", status="suggested", mention_type="Modifier")
    ovarian = _mention(doc, "ovarian cancer", status="nil", mention_type="SpecificDisease")
    Link.objects.create(mention=breast_mention, concept=breast, concept_ref="D001943", origin="gold")
    Link.objects.create(mention=familial, concept=breast, concept_ref="D001943", origin="gold")
    Link.objects.create(mention=ovarian, concept_ref="D010051", origin="gold")
    return KB(dictionary, version, old, root, neoplasms, by_site, breast, collection, doc, doc2, breast_mention, familial, inner, ovarian)


def concept_path(concept: Concept) -> str:
    return f"/dictionaries/{concept.version.dictionary.slug}/concepts/{concept.concept_id}/?version={concept.version_id}"


def search(client: Client, query: str, **params: object) -> tuple[list[str], str]:
    """Concept ids listed by the typeahead endpoint, in order, and the fragment's HTML."""
    response = client.get("/dictionaries/medic/search/", {"q": query, **params}, headers={"HX-Request": "true"})
    assert response.status_code == 200
    html = response.content.decode()
    return re.findall(r'<span class="hit-id">([^<]+)</span>', html), html


def mark_for(html: str, mention: Mention) -> str:
    """The <mark> element that opens with the mention's anchor id."""
    found = re.search(rf'<mark [^>]*id="mention-{mention.pk}"[^>]*>.*?</mark>', html, re.S)
    assert found, f"no <mark> with id mention-{mention.pk}"
    return found.group(0)


# --- home ------------------------------------------------------------------------------------------


def test_home_shows_dictionaries_and_collections_with_counts(bob_client: Client, kb: KB) -> None:
    response = bob_client.get("/")
    assertContains(response, '<a href="/dictionaries/medic/">MEDIC</a>', html=True)
    assertContains(response, '<a href="/collections/ncbi-dev/">NCBI Disease dev</a>', html=True)
    assertContains(response, "<dt>Documents</dt><dd>2</dd>", html=True)
    assertContains(response, "<dt>Mentions</dt><dd>4</dd>", html=True)
    assertContains(response, "<dt>Decided</dt><dd>2</dd>", html=True)
    row = re.search(r'<a href="/dictionaries/medic/">.*?</tr>', response.content.decode(), re.S).group(0)  # type: ignore[union-attr]
    assert re.findall(r"<td[^>]*>([^<]+)</td>", row) == ["2024-01", "4", "8"]  # latest release, counted concepts, names


def test_nav_has_admin_only_for_admins(bob_client: Client, kb: KB) -> None:
    response = bob_client.get("/")
    assertContains(response, 'href="/dictionaries/"')
    assertContains(response, 'href="/collections/"')
    assertNotContains(response, 'href="/admin/"')


def test_admin_sees_admin_link(alice_client: Client, kb: KB) -> None:
    assertContains(alice_client.get("/"), '<a href="/admin/">Admin</a>', html=True)


def test_page_sends_csrf_token_with_htmx_and_loads_vendored_htmx(bob_client: Client) -> None:
    response = bob_client.get("/")
    token = response.context["csrf_token"]
    assertContains(response, f"""hx-headers='{{"X-CSRFToken": "{token}"}}'""")
    assertContains(response, '<script src="/static/vendor/htmx.min.js" defer></script>')


# --- dictionaries ----------------------------------------------------------------------------------


def test_dictionary_list_shows_versions_with_stored_or_counted_counts(bob_client: Client, kb: KB) -> None:
    DictionaryVersion.objects.filter(pk=kb.old_version.pk).update(concept_count=1200, name_count=3400, edge_count=56)
    response = bob_client.get("/dictionaries/")
    html = response.content.decode()
    latest = re.search(r"<tr>\s*<td><a[^>]*>2024-01</a>.*?</tr>", html, re.S).group(0)  # type: ignore[union-attr]
    assert re.findall(r'<td class="num">(\d+)</td>', latest) == ["4", "8", "4"]  # counted: 4 concepts, 8 names, 4 edges
    old = re.search(r"<tr>\s*<td><a[^>]*>2011</a>.*?</tr>", html, re.S).group(0)  # type: ignore[union-attr]
    assert re.findall(r'<td class="num">([\d,]+)</td>', old) == ["1,200", "3,400", "56"]  # stored at import
    assertContains(response, "latest")


def test_dictionary_detail_lists_concepts_of_the_latest_version(bob_client: Client, kb: KB) -> None:
    response = bob_client.get("/dictionaries/medic/")
    assert response.context["version"] == kb.version
    assertContains(response, f'<a href="{concept_path(kb.breast)}">MESH:D001943</a>', html=True)
    assertContains(response, "<td>Breast Neoplasms</td>", html=True)
    assertNotContains(response, "Breast Neoplasms (2011)")


def test_dictionary_detail_of_an_older_version(bob_client: Client, kb: KB) -> None:
    response = bob_client.get(f"/dictionaries/medic/?version={kb.old_version.pk}")
    assertContains(response, "Breast Neoplasms (2011)")
    assertNotContains(response, "<td>Neoplasms</td>", html=True)


def test_concept_list_paginates(bob_client: Client, kb: KB) -> None:
    Concept.objects.bulk_create(
        Concept(version=kb.version, concept_id=f"X:{i:03d}", preferred_name=f"filler {i}") for i in range(60)
    )
    first = bob_client.get("/dictionaries/medic/")
    assert [c.concept_id for c, _ in first.context["rows"]][:2] == ["MESH:C", "MESH:D001943"]
    assertContains(first, "1–50 of 64")
    second = bob_client.get(f"/dictionaries/medic/?version={kb.version.pk}&page=2", headers={"HX-Request": "true", "HX-Target": "concept-list"})
    html = second.content.decode()
    assert html.lstrip().startswith('<section id="concept-list"')  # the partial only
    assert "X:063" not in html and "X:059" in html and "51–64 of 64" in html


def test_concept_search_finds_a_concept_by_synonym_prefix(bob_client: Client, kb: KB) -> None:
    ids, html = search(bob_client, "Breast canc")
    assert ids == ["MESH:D001943"]
    assert html.lstrip().startswith('<div id="search-results"')  # a fragment, not the page
    assert f'<a href="{concept_path(kb.breast)}">' in html
    assert '<span class="hit-name">Breast Neoplasms</span>' in html
    assert '<span class="hit-match">matched “breast cancer”</span>' in html


def test_concept_search_is_fuzzy_and_ranks_exact_names_first(bob_client: Client, kb: KB) -> None:
    assert search(bob_client, "mammary carcinomas")[0] == ["MESH:D001943"]
    assert search(bob_client, "neoplasms")[0][0] == "MESH:D009369"


def test_concept_search_by_id_and_alternative_id(bob_client: Client, kb: KB) -> None:
    for query in ("MESH:D001943", "DO:1612"):
        ids, html = search(bob_client, query)
        assert ids[0] == "MESH:D001943"
        assert "matched by id" in html


def test_concept_search_in_an_older_version(bob_client: Client, kb: KB) -> None:
    ids, html = search(bob_client, "breast", version=kb.old_version.pk)
    assert ids == ["MESH:D001943"]
    assert "Breast Neoplasms (2011)" in html


def test_concept_search_asks_for_more_characters_and_says_when_nothing_matches(bob_client: Client, kb: KB) -> None:
    assertContains(bob_client.get("/dictionaries/medic/search/", {"q": "b"}), "Type at least 2 characters.")
    assertContains(bob_client.get("/dictionaries/medic/search/", {"q": "zzqqxx"}), "No concept matches “zzqqxx”.")


def test_dictionary_page_with_query_shows_results_without_javascript(bob_client: Client, kb: KB) -> None:
    response = bob_client.get("/dictionaries/medic/", {"q": "tumour"})
    assertContains(response, f'<a href="{concept_path(kb.neoplasms)}">')
    assertContains(response, 'value="tumour"')


def test_concept_page_shows_names_types_parents_children_and_paths(bob_client: Client, kb: KB) -> None:
    response = bob_client.get(f"/dictionaries/medic/concepts/{kb.neoplasms.concept_id}/")
    assert response.status_code == 200
    assertContains(response, f'<a href="{concept_path(kb.root)}">Diseases</a>', html=True)  # parent
    assertContains(response, f'<a href="{concept_path(kb.breast)}">Breast Neoplasms</a>', html=True)  # child
    assertContains(response, f'<a href="{concept_path(kb.by_site)}">Neoplasms by Site</a>', html=True)  # child

    breast = bob_client.get(concept_path(kb.breast))
    assertContains(breast, '<div class="concept-id" id="concept-id">MESH:D001943</div>', html=True)
    assertContains(breast, '<li class="badge mono">DO:1612</li>', html=True)
    assertContains(breast, "Tumors or cancer of the human breast.")
    assertContains(breast, '<li class="badge badge-primary" title="MEDIC slim: cancer">Cancer</li>', html=True)
    names = {n.text: n for n in breast.context["names"]}
    assert list(names) == ["Breast Neoplasms", "breast cancer", "familial breast cancer", "mammary carcinoma"]
    for text, source in [("mammary carcinoma", "Curator synonym"), ("familial breast cancer", "Training mention")]:
        assert re.search(rf"<td>{text}</td>\s*<td>{source}", breast.content.decode())
    assert re.search(r"<td>breast cancer</td>\s*<td>Dictionary</td>\s*<td>EXACT</td>", breast.content.decode())
    paths = [[c.concept_id for c in path] for path in breast.context["root_paths"].paths]
    assert paths == [
        ["MESH:C", "MESH:D009369", "MESH:D001943"],
        ["MESH:C", "MESH:D009369", "MESH:D009371", "MESH:D001943"],
    ]
    assertContains(breast, "Paths to the root")


def test_root_concept_says_so(bob_client: Client, kb: KB) -> None:
    response = bob_client.get(concept_path(kb.root))
    assertContains(response, "This concept is a root of the hierarchy.")
    assertContains(response, "None: a root concept.")


def test_concept_alternative_id_redirects_to_the_concept(bob_client: Client, kb: KB) -> None:
    response = bob_client.get("/dictionaries/medic/concepts/DO:1612/")
    assert response.status_code == 302
    assert response["Location"] == concept_path(kb.breast)


def test_unknown_concept_is_404(bob_client: Client, kb: KB) -> None:
    assert bob_client.get("/dictionaries/medic/concepts/MESH:D999999/").status_code == 404
    assert bob_client.get("/dictionaries/medic/concepts/MESH:D001943/?version=abc").status_code == 404


def test_concept_url_reverses_with_colons(kb: KB) -> None:
    url = reverse("vocab:concept", args=["medic", "MESH:D001943"])
    assert url == "/dictionaries/medic/concepts/MESH:D001943/"


# --- collections and documents ---------------------------------------------------------------------


def test_collection_list_shows_documents_mentions_and_decided_share(bob_client: Client, kb: KB) -> None:
    response = bob_client.get("/collections/")
    html = response.content.decode()
    row = re.search(r"<tr>\s*<td>\s*<a href=\"/collections/ncbi-dev/\">.*?</tr>", html, re.S).group(0)  # type: ignore[union-attr]
    assert re.findall(r'<td class="num">(\d+)</td>', row) == ["2", "4"]
    # accepted + NIL are decided; the model suggestion and the unreviewed mention are not
    assert '<progress max="4" value="2" aria-label="2 of 4 mentions decided"></progress><span>50%</span>' in row
    assert '<a href="/dictionaries/medic/">MEDIC</a>' in row


def test_collection_detail_lists_documents_with_mention_counts(bob_client: Client, kb: KB) -> None:
    response = bob_client.get("/collections/ncbi-dev/")
    html = response.content.decode()
    assert re.search(
        rf'<a href="/collections/ncbi-dev/documents/{kb.doc.pk}/">10001</a></td>\s*<td>Breast cancer in &lt;b&gt;women&lt;/b&gt;.</td>\s*<td class="num">4</td>',
        html,
    )
    assert re.search(rf'<a href="/collections/ncbi-dev/documents/{kb.doc2.pk}/">10002</a></td>\s*<td>Second</td>\s*<td class="num">0</td>', html)


def test_collection_detail_paginates(bob_client: Client, kb: KB) -> None:
    Document.objects.bulk_create(Document(collection=kb.collection, external_id=f"2{i:04d}", text="x") for i in range(55))
    response = bob_client.get("/collections/ncbi-dev/?page=2", headers={"HX-Request": "true", "HX-Target": "document-list"})
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="document-list"')
    assert "51–57 of 57" in html and "20054" in html and "10001" not in html


def test_document_page_highlights_a_mention_with_its_gold_id(bob_client: Client, kb: KB) -> None:
    response = bob_client.get(f"/collections/ncbi-dev/documents/{kb.doc.pk}/")
    html = response.content.decode()
    mark = mark_for(html, kb.breast_mention)
    assert mark.startswith(f'<mark class="mention status-accepted" id="mention-{kb.breast_mention.pk}" data-mention-id="{kb.breast_mention.pk}"')
    assert 'title="Breast cancer · SpecificDisease · Accepted · gold: MESH:D001943"' in mark
    assert '>Breast cancer<span class="mention-type" aria-hidden="true">SpecificDisease</span></mark>' in mark
    # The mention table links the gold id to the concept page.
    row = re.search(rf'<tr id="mention-row-{kb.breast_mention.pk}".*?</tr>', html, re.S).group(0)  # type: ignore[union-attr]
    assert f'<a class="mono" href="{concept_path(kb.breast)}">MESH:D001943</a>' in row
    assert '<span class="status-pill status-accepted">Accepted</span>' in row


def test_document_page_shows_unresolved_gold_ids_and_nil_status(bob_client: Client, kb: KB) -> None:
    html = bob_client.get(f"/collections/ncbi-dev/documents/{kb.doc.pk}/").content.decode()
    mark = mark_for(html, kb.ovarian)
    assert 'class="mention status-nil"' in mark and "gold: D010051" in mark
    row = re.search(rf'<tr id="mention-row-{kb.ovarian.pk}".*?</tr>', html, re.S).group(0)  # type: ignore[union-attr]
    assert '<span class="mono">D010051</span>' in row and "unresolved" in row


def test_document_page_renders_nested_mentions_deterministically(bob_client: Client, kb: KB) -> None:
    html = bob_client.get(f"/collections/ncbi-dev/documents/{kb.doc.pk}/").content.decode()
    outer = mark_for(html, kb.familial)
    assert outer.startswith(f'<mark class="mention status-pending" id="mention-{kb.familial.pk}"')
    assert ">Familial </mark>" in outer
    inner = mark_for(html, kb.inner)
    assert inner.startswith(f'<mark class="mention status-suggested overlap" id="mention-{kb.inner.pk}"')
    assert f'data-mention-ids="{kb.familial.pk} {kb.inner.pk}"' in inner
    # Both mentions end on "cancer": both type badges follow it, outer first.
    assert inner.endswith(
        'breast cancer<span class="mention-type" aria-hidden="true">SpecificDisease</span>'
        '<span class="mention-type" aria-hidden="true">Modifier</span></mark>'
    )


def test_document_text_is_escaped_and_the_title_set_apart(bob_client: Client, kb: KB) -> None:
    html = bob_client.get(f"/collections/ncbi-dev/documents/{kb.doc.pk}/").content.decode()
    assert "<b>women</b>" not in html
    title = re.search(r'<h2 class="doc-title">(.*?)</h2>', html, re.S).group(1)  # type: ignore[union-attr]
    assert title.endswith(" in &lt;b&gt;women&lt;/b&gt;.")
    body = re.search(r'<div class="doc-text">(.*?)</div>', html, re.S).group(1)  # type: ignore[union-attr]
    assert body.startswith("<mark ")  # the space after the title is not repeated
    assert re.sub(r"<[^>]+>|SpecificDisease|Modifier", "", body) == TEXT[len(TITLE) + 1 :]


def test_document_previous_and_next_links(bob_client: Client, kb: KB) -> None:
    first = bob_client.get(f"/collections/ncbi-dev/documents/{kb.doc.pk}/")
    assertContains(first, f'href="/collections/ncbi-dev/documents/{kb.doc2.pk}/"')
    assertContains(first, '<span class="btn" aria-disabled="true">‹ Previous</span>', html=True)
    second = bob_client.get(f"/collections/ncbi-dev/documents/{kb.doc2.pk}/")
    assertContains(second, f'href="/collections/ncbi-dev/documents/{kb.doc.pk}/"')
    assertContains(second, '<span class="btn" aria-disabled="true">Next ›</span>', html=True)


def test_document_of_another_collection_is_404(bob_client: Client, kb: KB) -> None:
    Collection.objects.create(slug="other", title="Other")
    assert bob_client.get(f"/collections/other/documents/{kb.doc.pk}/").status_code == 404


def test_status_legend_counts_mentions(bob_client: Client, kb: KB) -> None:
    response = bob_client.get(f"/collections/ncbi-dev/documents/{kb.doc.pk}/")
    assert response.context["status_counts"] == [
        ("pending", "Not reviewed", 1),
        ("suggested", "Suggested by the model", 1),
        ("accepted", "Accepted", 1),
        ("relinked", "Relinked", 0),
        ("nil", "NIL (no concept)", 1),
        ("rejected", "Rejected span", 0),
    ]


@pytest.mark.parametrize("path", ["/dictionaries/", "/collections/"])
def test_empty_lists_explain_what_to_do(bob_client: Client, path: str) -> None:
    assertContains(bob_client.get(path), 'class="empty"')


def test_concept_ids_with_unusual_characters_round_trip(bob_client: Client, kb: KB) -> None:
    odd = _concept(kb.version, "OMIM:600185/ä", "Odd id")
    response = bob_client.get(f"/dictionaries/medic/concepts/{quote(odd.concept_id)}/")
    assertContains(response, '<div class="concept-id" id="concept-id">OMIM:600185/ä</div>', html=True)


def test_pages_run_a_fixed_number_of_queries(bob_client: Client, kb: KB) -> None:
    """More mentions, links, names and children must not mean more queries (no N+1 in the templates)."""
    paths = [
        f"/collections/ncbi-dev/documents/{kb.doc.pk}/",
        concept_path(kb.breast),
        "/dictionaries/medic/",
        "/dictionaries/medic/search/?q=neo",
        "/collections/ncbi-dev/",
        "/collections/",
        "/",
    ]

    def counts() -> list[int]:
        result = []
        for path in paths:
            with CaptureQueriesContext(connection) as queries:
                assert bob_client.get(path).status_code == 200
            result.append(len(queries))
        return result

    before = counts()
    for i in range(5):
        child = _concept(kb.version, f"X:{i}", f"extra neoplasm {i}", (f"neoplasm synonym {i}", "curator", ""))
        HierarchyEdge.objects.create(version=kb.version, child=child, parent=kb.breast)
        doc = Document.objects.create(collection=kb.collection, external_id=f"3000{i}", text=f"neoplasm {i}")
        mention = _mention(doc, "neoplasm", status="accepted")
        Link.objects.create(mention=mention, concept=child, concept_ref=child.concept_id, origin="gold")
        extra = _mention(kb.doc, "cancer", occurrence=i % 3, mention_type=f"T{i}")
        Link.objects.create(mention=extra, concept=child, concept_ref=child.concept_id, origin="gold")
    assert counts() == before


def test_dictionary_without_a_release_says_so(bob_client: Client) -> None:
    Dictionary.objects.create(slug="hpo", title="HPO")
    response = bob_client.get("/dictionaries/hpo/")
    assertContains(response, "No release of this dictionary has been imported yet.")
    assert bob_client.get("/dictionaries/hpo/search/?q=abc").status_code == 404
    assertContains(bob_client.get("/dictionaries/"), "No release of this dictionary has been imported yet.")


@pytest.mark.parametrize(
    "title,text,headings",
    [
        ("Only a title", "Only a title", []),  # the text is the title: shown once, as text
        ("A title kept apart", "The abstract alone.", ["A title kept apart"]),  # not in the text: shown above it
        ("", "No title at all.", []),
    ],
)
def test_document_title_is_shown_once(bob_client: Client, kb: KB, title: str, text: str, headings: list[str]) -> None:
    doc = Document.objects.create(collection=kb.collection, external_id="t", title=title, text=text)
    html = bob_client.get(f"/collections/ncbi-dev/documents/{doc.pk}/").content.decode()
    assert re.findall(r'<h2 class="doc-title">(.*?)</h2>', html) == headings
    assert f'<div class="doc-text">{text}</div>' in html
