"""Curation pages and fragments through Django's test client: roles, the panel, decisions over HTTP, conflicts."""

from __future__ import annotations

from webapp.corpus.models import Document, Link, Mention
from webapp.curation.models import Decision
from webapp.vocab.models import Concept


def _doc() -> Document:
    return Document.objects.get(external_id="demo-1")


def test_charlie_without_a_role_cannot_curate(client, charlie, demo) -> None:  # type: ignore[no-untyped-def]
    client.force_login(charlie)
    m = Mention.objects.first()
    for url in ("/curate/", "/curate/demo/", f"/curate/demo/documents/{_doc().pk}/", f"/curate/mentions/{m.pk}/panel/"):
        assert client.get(url).status_code == 403, url
    assert client.post(f"/curate/mentions/{m.pk}/decide/", {"action": "nil", "seen": m.updated_at.isoformat()}).status_code == 403


def test_only_admins_see_and_use_the_linking_control(client, alice, bob, demo) -> None:  # type: ignore[no-untyped-def]
    client.force_login(bob)
    page = client.get("/curate/demo/").content.decode()
    assert "Review queue" in page and "Start reviewing" in page
    assert "Suggest links for open mentions" not in page
    assert client.post("/curate/demo/suggest/").status_code == 403
    client.force_login(alice)
    assert "Suggest links for open mentions" in client.get("/curate/demo/").content.decode()


def test_the_dashboard_counts_documents_mentions_reviewed_and_queue(bob_client, demo) -> None:  # type: ignore[no-untyped-def]
    response = bob_client.get("/curate/")
    stats = {s.collection.slug: s for s in response.context["stats"]}["demo"]
    assert (stats.documents, stats.mentions, stats.reviewed, stats.queue) == (6, 40, 0, 40)


def test_the_document_page_highlights_every_mention_with_status_and_type(bob_client, demo) -> None:  # type: ignore[no-untyped-def]
    doc = _doc()
    html = bob_client.get(f"/curate/demo/documents/{doc.pk}/").content.decode()
    for m in doc.mentions.all():
        assert f'id="mention-{m.pk}"' in html
    assert 'data-badge="SpecificDisease"' in html and "status-pending" in html
    assert 'src="/static/js/curation.js"' in html and "curation.css" in html


def test_the_panel_lists_ranked_candidates_with_types_paths_and_the_matched_synonym(bob_client, demo) -> None:  # type: ignore[no-untyped-def]
    m = Mention.objects.get(text="Type 2 diabetes")
    response = bob_client.get(f"/curate/mentions/{m.pk}/panel/", HTTP_HX_REQUEST="true")
    panel = response.context["p"]
    top, second = panel.candidates[:2]
    assert (top.concept_id, top.rank, top.is_gold) == ("MESH:D003924", 1, True)
    assert second.concept_id == "MESH:D003922" and second.matched != second.preferred_name
    assert [c.label for c in top.known_types] and top.path[0].concept_id == "MESH:C" and top.path[-1] == top.concept
    assert top.parent is not None and top.parent.concept_id == "MESH:D003920"
    html = response.content.decode()
    assert "latent:" not in html and 'data-action="pick" data-number="2"' in html  # no latent types without a re-ranker
    m.refresh_from_db()
    # A GET stores nothing: a decision stores the ranking shown first (tests/integration/test_decision_stores_the_ranking_shown.py).
    assert m.status == Mention.Status.PENDING and not m.links.filter(origin=Link.Origin.MODEL).exists()


def test_a_decision_over_http_answers_with_the_panel_and_a_stale_one_with_409(bob_client, alice, demo) -> None:  # type: ignore[no-untyped-def]
    m = Mention.objects.get(text="hypertension")
    bob_client.get(f"/curate/mentions/{m.pk}/panel/")
    m.refresh_from_db()
    seen = m.updated_at.isoformat()
    response = bob_client.post(f"/curate/mentions/{m.pk}/decide/", {"action": "accept", "seen": seen, "time_on_task_ms": "1500"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert "curation:decided" in response["HX-Trigger"]
    assert 'id="document-text"' in response.content.decode() and 'hx-swap-oob="true"' in response.content.decode()
    d = Decision.objects.get(mention=m)
    assert (d.action, d.rank, d.time_on_task_ms) == ("accept", 1, 1500)

    bob_client.force_login(alice)
    stale = bob_client.post(f"/curate/mentions/{m.pk}/decide/", {"action": "nil", "seen": seen}, HTTP_HX_REQUEST="true")
    assert stale.status_code == 409
    assert "bob accepted the suggestion for this mention" in stale.content.decode()
    assert Decision.objects.filter(mention=m).count() == 1


def test_search_finds_concepts_and_family_lists_parent_and_siblings(bob_client, demo) -> None:  # type: ignore[no-untyped-def]
    m = Mention.objects.get(text="obese")
    hits = bob_client.get(f"/curate/mentions/{m.pk}/search/", {"q": "obesity"}).context["hits"]
    assert hits[0].concept.concept_id == "MESH:D009765"
    t2 = Concept.objects.get(concept_id="MESH:D003924")
    family = bob_client.get(f"/curate/mentions/{m.pk}/family/{t2.pk}/").context["f"]
    parent, siblings, _ = family.parents[0]
    assert parent.concept_id == "MESH:D003920" and "MESH:D003922" in {s.concept_id for s in siblings}


def test_undo_and_added_mentions_over_http(bob_client, demo) -> None:  # type: ignore[no-untyped-def]
    doc = _doc()
    start = doc.text.index("older adults")
    response = bob_client.post(f"/curate/documents/{doc.pk}/mentions/", {"start": start, "end": start + 12, "mention_type": "Modifier"})
    assert response.status_code == 200 and "curation:added" in response["HX-Trigger"]
    added = Mention.objects.get(document=doc, text="older adults")
    undo = bob_client.post(f"/curate/documents/{doc.pk}/undo/")
    assert undo.status_code == 200 and "curation:undone" in undo["HX-Trigger"]
    assert not Mention.objects.filter(pk=added.pk).exists()
    nothing = bob_client.post(f"/curate/documents/{doc.pk}/undo/")
    assert "Nothing of yours to undo" in nothing["HX-Trigger"]


def test_the_queue_opens_the_most_uncertain_mention(bob_client, demo) -> None:  # type: ignore[no-untyped-def]
    from webapp.curation.selectors import review_queue
    from webapp.curation.services import suggest_for_collection

    suggest_for_collection(demo.pk)
    first = review_queue(demo).first()
    response = bob_client.get("/curate/demo/queue/next/")
    assert response.status_code == 302
    assert response["Location"] == f"/curate/demo/documents/{first.document_id}/?m={first.pk}&queue=1"
