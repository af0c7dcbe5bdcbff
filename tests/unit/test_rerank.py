"""The LATTE re-ranker on a tiny dictionary: shapes, a loss that falls, the artifact's round trip, and the
refusal (with the retriever's ranking as the fallback) of a re-ranker that does not fit its linker."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
import torch

from linker.config import LinkerConfig
from linker.data import GoldMention, PubTatorDocument
from linker.dictionary import NameTable
from linker.linker import Linker
from linker.recipe import LatteRecipeConfig, TrainingCallbacks, TrainingInputs, prior_counts, train
from linker.rerank import MentionSpan, RerankerError
from linker.rerank.model import LatteConfig, LatteModel
from linker.rerank.training import RerankTrainingConfig

TYPES = {
    "D001943": ("Neoplasms",), "D010051": ("Neoplasms",), "D015179": ("Neoplasms",), "D009101": ("Neoplasms",),
    "D003920": ("Metabolic diseases",), "D003924": ("Metabolic diseases",),
    "D001260": ("Nervous system diseases",), "D006816": ("Nervous system diseases",),
}
# (sentence, mention, concept): "AT" and "DM" are only resolved by their context.
SENTENCES = [
    ("Patients with {} developed tumours of the breast.", "breast cancer", "D001943"),
    ("The {} was treated with chemotherapy of the ovary.", "ovarian cancer", "D010051"),
    ("Insulin resistance and {} raised glucose.", "type 2 diabetes", "D003924"),
    ("Children with {} showed ataxia and telangiectasia.", "AT", "D001260"),
    ("High glucose and {} needed insulin.", "DM", "D003920"),
    ("Chorea in {} progressed.", "Huntington disease", "D006816"),
    ("Marrow plasma cells in {} were counted.", "myeloma", "D009101"),
    ("Colon biopsies showed {} in the bowel.", "colorectal cancer", "D015179"),
]


def _docs(n: int) -> list[PubTatorDocument]:
    docs = []
    for d in range(n):
        parts, mentions, pos = [], [], 0
        for s, (template, mention, cid) in enumerate(SENTENCES):
            if (d + s) % 3 == 0:
                continue
            before = template.split("{}")[0]
            sentence = template.format(mention)
            start = pos + len(before)
            mentions.append(GoldMention(start, start + len(mention), mention, "Disease", cid, ((cid,),)))
            parts.append(sentence)
            pos += len(sentence) + 1
        docs.append(PubTatorDocument(str(100 + d), " ".join(parts), "", tuple(mentions)))
    return docs


def test_the_model_scores_every_candidate_and_types_both_sides() -> None:
    model = LatteModel(LatteConfig(input_dim=16, hidden=8, latent_types=32, known_types=3))
    b, c, m, n = 2, 4, 7, 5
    mention = (torch.randn(b, m, 16), torch.ones(b, m, dtype=torch.bool), torch.full((b, m), 2))
    candidates = (torch.randn(b * c, n, 16), torch.ones(b * c, n, dtype=torch.bool), torch.full((b * c, n), 2))
    out = model(mention, candidates, torch.randn(b, c, 8))
    assert out.score.shape == out.match.shape == out.type_similarity.shape == (b, c)
    assert out.mention_latent.shape == (b, 32) and out.candidate_latent.shape == (b, c, 32)
    assert torch.allclose(out.mention_latent.sum(-1), torch.ones(b))
    assert out.mention_known_logits is not None and out.mention_known_logits.shape == (b, 3)
    assert out.candidate_known_logits is not None and out.candidate_known_logits.shape == (b, c, 3)
    assert ((out.type_similarity >= -1e-5) & (out.type_similarity <= 1 + 1e-5)).all()


def test_ranking_as_the_retriever_keeps_the_trained_type_heads() -> None:
    """What serves when no epoch beat the retriever on the held-out fold: the retriever's order, with the
    trained network's types (epoch 0's untrained heads put every known type near 50 %)."""
    torch.manual_seed(0)
    model = LatteModel(LatteConfig(input_dim=16, hidden=8, latent_types=32, known_types=3)).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p))  # as if trained
    known_before = [p.clone() for p in model.known.parameters()]  # type: ignore[union-attr]
    model.rank_as_retriever()
    b, c = 2, 4
    mention = (torch.randn(b, 7, 16), torch.ones(b, 7, dtype=torch.bool), torch.full((b, 7), 2))
    candidates = (torch.randn(b * c, 5, 16), torch.ones(b * c, 5, dtype=torch.bool), torch.full((b * c, 5), 2))
    features = torch.randn(b, c, 8)
    features[:, :, 5] = 1.0 / torch.arange(1, c + 1)  # the inverse rank
    with torch.no_grad():
        out = model(mention, candidates, features)
    assert (out.score.argsort(dim=1, descending=True) == torch.arange(c)).all()
    assert all(torch.equal(a, p) for a, p in zip(known_before, model.known.parameters(), strict=True))  # type: ignore[union-attr]


def test_types_from_pooled_names_are_the_full_passes_types() -> None:
    """A model that keeps the retriever's order scores from its candidates' pooled names (no candidate token through
    the encoder or the cross-attention) and gives the same r, g and types as the full pass; f is not computed."""
    torch.manual_seed(1)
    model = LatteModel(LatteConfig(input_dim=16, hidden=8, latent_types=32, known_types=3)).eval()
    b, c, n = 2, 4, 5
    mention = (torch.randn(b, 7, 16), torch.ones(b, 7, dtype=torch.bool), torch.full((b, 7), 2))
    mask = torch.ones(b * c, n, dtype=torch.bool)
    mask[1, 3:] = False  # a shorter name
    candidates = (torch.randn(b * c, n, 16), mask, torch.full((b * c, n), 2))
    features = torch.randn(b, c, 8)
    with torch.no_grad():
        full = model(mention, candidates, features)
        short = model.types_only(mention, model.pooled_names(*candidates).view(b, c, -1), features)
    for name in ("score", "type_similarity", "mention_latent", "candidate_latent", "mention_known_logits",
                 "candidate_known_logits"):
        assert torch.allclose(getattr(full, name), getattr(short, name), atol=1e-5), name
    assert torch.isnan(short.match).all()
    with torch.no_grad():
        model.w_f.fill_(0.5)
    assert model.reads_match()
    with pytest.raises(ValueError, match="reads f"):
        model.types_only(mention, model.pooled_names(*candidates).view(b, c, -1), features)
    # The g-only ablation re-orders by g without reading f: the same short path serves it.
    g_only = LatteModel(LatteConfig(input_dim=16, hidden=8, latent_types=32, known_types=3, use_match=False)).eval()
    with torch.no_grad():
        g_only.w_g.fill_(3.0)
        full = g_only(mention, candidates, features)
        short = g_only.types_only(mention, g_only.pooled_names(*candidates).view(b, c, -1), features)
    assert not g_only.reads_match() and torch.allclose(full.score, short.score, atol=1e-5)


def _latent_gradient(part_weight: float) -> float:
    """The gradient that reaches the latent-type layer W_l in one step from the initial state (the retriever's
    order: w_f = w_g = 0), without the known-type loss."""
    from linker.rerank.training import PreparedExamples, _LatteTask  # noqa: PLC0415 (private: the loss's wiring)

    torch.manual_seed(0)
    model = LatteModel(LatteConfig(input_dim=16, hidden=8, latent_types=32))
    b, c = 4, 5
    batch = {
        "mention": (torch.randn(b, 7, 16), torch.ones(b, 7, dtype=torch.bool), torch.full((b, 7), 2)),
        "candidates": (torch.randn(b * c, 5, 16), torch.ones(b * c, 5, dtype=torch.bool), torch.full((b * c, 5), 2)),
        "features": torch.randn(b, c, 8), "valid": torch.ones(b, c, dtype=torch.bool),
        "gold": torch.eye(b, c, dtype=torch.bool), "weight": torch.ones(b, c),
    }
    data = PreparedExamples.__new__(PreparedExamples)  # a batch made by hand instead of from examples
    data.examples = []
    data.batch = lambda idx: batch  # type: ignore[method-assign]
    task = _LatteTask(model, data, RerankTrainingConfig(known_type_weight=0.0, part_weight=part_weight), None)
    loss, _ = task.batch_loss([0], torch.device("cpu"))
    loss.backward()
    grad = model.latent.weight.grad
    return float(grad.abs().sum()) if grad is not None else 0.0


def test_the_latent_types_learn_from_the_first_step() -> None:
    """r starts as the retriever's order (w_f = w_g = 0), so through r alone g passes no gradient to the latent
    types; g's own ranking loss (the paper's pairwise constraint) trains them from the first step."""
    assert _latent_gradient(part_weight=0.0) == 0.0
    assert _latent_gradient(part_weight=1.0) > 0.0


@pytest.fixture(scope="module")
def trained(minilm, tiny_table: NameTable, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """A tiny base linker and a LATTE artifact trained over it through the recipe."""
    root = tmp_path_factory.mktemp("latte")
    config = LatteRecipeConfig(model=LatteConfig(hidden=16, latent_types=16),
                               training=RerankTrainingConfig(epochs=12, batch_size=8, lr=3e-3, min_type_count=1),
                               top_k=5, folds=3)
    folder, report = _train_tiny(minilm, tiny_table, root, _docs(12), config, dev_documents=_docs(3))
    return root, folder, report


def _train_tiny(minilm, tiny_table: NameTable, root: Path, docs: list[PubTatorDocument], config: LatteRecipeConfig,  # type: ignore[no-untyped-def]
                dev_documents: list[PubTatorDocument] | None = None) -> tuple[Path, dict]:
    """A LATTE artifact in ``root / "latte"`` over a tiny base linker saved in ``root / "base"``, through the recipe."""
    base = Linker.build(tiny_table.copy(), copy.deepcopy(minilm), LinkerConfig(text=tiny_table.cfg))
    base.save(root / "base")
    inputs = TrainingInputs(table=tiny_table.copy(), pairs=[], concept_counts=prior_counts(docs, tiny_table),
                            out=root / "latte", documents=docs, concept_types=TYPES, base_artifact=root / "base",
                            dev_documents=dev_documents or ())
    return train("latte", inputs, config, TrainingCallbacks())


def test_training_lowers_the_loss_and_writes_a_linker_with_a_reranker(trained) -> None:  # type: ignore[no-untyped-def]
    root, folder, report = trained
    losses = [epoch["loss"] for epoch in report["latte"]]
    assert losses[-1] < losses[0] * 0.7
    assert (folder / "rerank" / "model.pt").exists() and (folder / "config.json").exists()
    assert report["known_types"] == 3
    assert report["dev"]["reranked_acc@1"] >= report["dev"]["retriever_acc@1"]
    # Each epoch scores dev by the LATTE protocol too (what bench/rerank_ablation.py reports per variant).
    assert all({"dev_reranked_acc@1", "dev_reranked_p@1", "dev_reranked_map"} <= set(e) for e in report["latte"])
    latent = json.loads((folder / "rerank" / "latent_types.json").read_text())
    assert len(latent) == 16 and all(t["typical_names"] for t in latent)  # every latent type is described
    assert sum(t["count"] for t in latent) == len(TYPES)  # each concept's preferred name has one best type
    assert report["latent_usage"]["types_used"] > 1  # not collapsed onto one type (see test_the_latent_types_learn...)


def test_a_saved_reranker_loads_and_ranks_the_same(trained) -> None:  # type: ignore[no-untyped-def]
    _, folder, _ = trained
    text = "High glucose and DM needed insulin."
    span = MentionSpan("DM", text.index("DM"), text.index("DM") + 2)
    first = Linker.load(folder, strict_rerank=True)
    again = Linker.load(folder, strict_rerank=True)
    a, b = first.link_in_context([span], text, k=5)[0], again.link_in_context([span], text, k=5)[0]
    # (This tiny re-ranker's held-out fold may keep the retriever's order: then the ranking is the retriever's.)
    assert a.ranked_by == b.ranked_by == first.ranked_by and a.typing is not None and len(a.typing) == len(a.candidates)
    assert [c.concept_id for c in a.candidates] == [c.concept_id for c in b.candidates]
    assert [round(c.score, 5) for c in a.candidates] == [round(c.score, 5) for c in b.candidates]
    assert a.mention_known_types and a.mention_known_types[0][0] in {"Metabolic diseases", "Neoplasms", "Nervous system diseases"}
    assert all(t.known_types == TYPES.get(c.concept_id, ()) for t, c in zip(a.typing, a.candidates, strict=True))
    assert first.reranker is not None and first.reranker.latent_type(a.typing[0].latent_type) is not None


def test_a_reranker_that_kept_the_retrievers_order_serves_its_types_with_the_retrievers_ranking(trained) -> None:  # type: ignore[no-untyped-def]
    """When no trained epoch beat the retriever on the held-out fold, r is 2/rank: the candidates keep the
    retriever's order and scores S (the panel's bars then mean something), the ranking is the retriever's,
    and the types are the re-ranker's."""
    root, folder, _ = trained
    text = "High glucose and DM needed insulin."
    span = MentionSpan("DM", text.index("DM"), text.index("DM") + 2)
    linker = Linker.load(folder, strict_rerank=True)
    assert linker.reranker is not None
    linker.reranker.model.rank_as_retriever()
    assert linker.reranker.keeps_retriever_order and linker.ranked_by == "retriever"
    served = linker.link_in_context([span], text, k=5)[0]
    retrieved = Linker.load(root / "base").link_in_context([span], text, k=5)[0]
    assert served.ranked_by == "retriever" and served.typing is not None and served.mention_known_types
    assert [(c.concept_id, c.score) for c in served.candidates] == [(c.concept_id, c.score) for c in retrieved.candidates]
    with torch.no_grad():
        linker.reranker.model.w_f.fill_(0.5)  # f counts: the re-ranker orders again
    assert not linker.reranker.keeps_retriever_order and linker.link_in_context([span], text, k=5)[0].ranked_by == "latte"


def test_stored_name_vectors_type_the_candidates_without_their_token_states(trained, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Training stores every dictionary name's pooled encoding with the re-ranker; one that keeps the retriever's
    order then types a panel's candidates from them, as the token states would, and encodes only names it lacks."""
    _, folder, report = trained
    assert (folder / "rerank" / "name_vectors.npy").exists() and report["name_vectors"]["names"] > 0
    text = "High glucose and DM needed insulin."
    span = MentionSpan("DM", text.index("DM"), text.index("DM") + 2)
    linker = Linker.load(folder, strict_rerank=True)
    reranker = linker.reranker
    assert reranker is not None and reranker.name_vectors is not None
    assert set(linker.table.raw_names) <= set(reranker.name_vectors.names)
    reranker.model.rank_as_retriever()
    served = linker.link_in_context([span], text, k=5)[0]
    assert not reranker.states._name_cache  # no candidate name went through the transformer
    reranker.name_vectors = None  # as a re-ranker saved without them
    full = linker.link_in_context([span], text, k=5)[0]
    assert reranker.states._name_cache
    assert served.typing is not None and full.typing is not None
    assert [(c.concept_id, c.score) for c in served.candidates] == [(c.concept_id, c.score) for c in full.candidates]
    assert [t.latent_type for t in served.typing] == [t.latent_type for t in full.typing]
    assert [round(t.type_similarity, 2) for t in served.typing] == [round(t.type_similarity, 2) for t in full.typing]
    assert [label for label, _ in served.mention_known_types] == [label for label, _ in full.mention_known_types]

    # A curator synonym added live is not in the store: it is encoded, and typed as the store would have typed it.
    reranker = Linker.load(folder, strict_rerank=True).reranker
    assert reranker is not None and reranker.name_vectors is not None
    name = reranker.name_vectors.names[0]
    stored = reranker.pooled_names([name])
    reranker.name_vectors = None
    assert torch.allclose(stored, reranker.pooled_names([name]), atol=2e-2)

    # A re-ranker folder whose name vectors are broken is refused as corrupted.
    broken = tmp_path / "broken"
    shutil.copytree(folder, broken)
    (broken / "rerank" / "name_vectors.json").write_text('["only one name"]\n')
    with pytest.raises(RerankerError, match="corrupted"):
        Linker.load(broken, strict_rerank=True)


def test_a_dictionary_over_the_name_vectors_cap_trains_without_them_and_serves(minilm, tiny_table: NameTable, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Millions of names would take hours to store: over ``name_vectors_max`` the re-ranker is saved without them,
    says so in its report, and its panel encodes the candidates' names as before."""
    config = LatteRecipeConfig(model=LatteConfig(hidden=16, latent_types=16),
                               training=RerankTrainingConfig(epochs=1, batch_size=8, min_type_count=1),
                               top_k=5, folds=2, name_vectors_max=3)
    folder, report = _train_tiny(minilm, tiny_table, tmp_path, _docs(6), config)
    assert report["name_vectors"]["names"] == 0 and not (folder / "rerank" / "name_vectors.npy").exists()
    linker = Linker.load(folder, strict_rerank=True)
    assert linker.reranker is not None and linker.reranker.name_vectors is None
    text = "High glucose and DM needed insulin."
    served = linker.link_in_context([MentionSpan("DM", text.index("DM"), text.index("DM") + 2)], text, k=5)[0]
    assert served.typing is not None and len(served.typing) == len(served.candidates)


def test_a_calibration_fitted_on_other_scores_than_the_linker_serves_is_set_aside(trained, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from linker.calibration import Calibration

    _, folder, _ = trained
    copy_ = tmp_path / "latte"
    shutil.copytree(folder, copy_)
    linker = Linker.load(copy_, strict_rerank=True)
    assert linker.reranker is not None
    linker.reranker.model.rank_as_retriever()
    linker.save(copy_)  # a re-ranker that keeps the retriever's order (serves S)
    kinds = {"": "the re-ranker's 2/rank", "latte": "latte", "retriever": None}
    for scored_by, problem in kinds.items():
        Calibration((0.5,) * 5, 0.0, (0.0,) * 5, (1.0,) * 5, scored_by=scored_by).save(copy_)
        loaded = Linker.load(copy_)
        if problem is None:
            assert loaded.calibration is not None and loaded.calibration_problem is None
        else:
            assert loaded.calibration is None
            assert loaded.calibration_problem == (f"the calibration was fitted on {problem} scores and this linker serves "
                                                  "the retriever's: calibrate it again (python -m linker calibrate, or a new run)")


def test_with_one_torch_thread_the_context_is_encoded_beside_retrieval_and_ranks_the_same(trained) -> None:  # type: ignore[no-untyped-def]
    from linker.overlap import beside

    _, folder, _ = trained
    text = "High glucose and DM needed insulin. Patients with breast cancer developed tumours."
    spans = [MentionSpan("DM", 17, 19), MentionSpan("breast cancer", 50, 63)]
    serial = Linker.load(folder, strict_rerank=True).link_in_context(spans, text, k=5)  # the suite's 2 threads
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as a web process serves
    try:
        overlapped = Linker.load(folder, strict_rerank=True)
        assert beside(torch.get_num_threads).result() == 1  # the pool's threads keep to one too
        linked = overlapped.link_in_context(spans, text, k=5)
        assert overlapped.reranker is not None and len(overlapped.reranker.states._mention_cache) == 2  # encoded by the pool
    finally:
        torch.set_num_threads(threads)
    for a, b in zip(serial, linked, strict=True):
        assert [c.concept_id for c in a.candidates] == [c.concept_id for c in b.candidates]
        assert [round(c.score, 4) for c in a.candidates] == [round(c.score, 4) for c in b.candidates]


def test_documents_linked_together_are_each_reranked_in_their_own_text(trained) -> None:  # type: ignore[no-untyped-def]
    """Linker.link_documents (what the spaCy component's nlp.pipe calls): the mentions of every document in one
    search, each re-ranked in its own text, as link_in_context ranks one document at a time; and so through
    spaCy's elwb_linker over the re-ranking artifact."""
    _, folder, _ = trained
    linker = Linker.load(folder, strict_rerank=True)
    texts = {"High glucose and DM needed insulin.": ["DM"], "Children with AT showed ataxia and telangiectasia.": ["AT"],
             "Patients with breast cancer and DM developed tumours.": ["breast cancer", "DM"]}
    documents = [([MentionSpan(m, t.index(m), t.index(m) + len(m)) for m in ms], t) for t, ms in texts.items()]
    together = linker.link_documents(documents, k=5)
    for (spans, text), linked in zip(documents, together, strict=True):
        for a, b in zip(linker.link_in_context(spans, text, k=5), linked, strict=True):
            assert a.ranked_by == b.ranked_by == linker.ranked_by
            assert [(c.concept_id, round(c.score, 4)) for c in a.candidates] == [(c.concept_id, round(c.score, 4)) for c in b.candidates]
    spacy = pytest.importorskip("spacy", reason="spaCy is a dev extra")
    import linker.spacy_component  # noqa: F401

    nlp = spacy.blank("en")
    nlp.add_pipe("entity_ruler").add_patterns([{"label": "DISEASE", "pattern": m} for ms in texts.values() for m in ms])
    nlp.add_pipe("elwb_linker", config={"artifact": str(folder), "k": 5})
    for doc, linked in zip(nlp.pipe(list(texts)), together, strict=True):
        assert [[cid for cid, _ in e._.kb_ents] for e in doc.ents] == [[c.concept_id for c in one.candidates] for one in linked]


def test_a_linker_without_a_reranker_ranks_as_the_retriever(trained) -> None:  # type: ignore[no-untyped-def]
    root, _, _ = trained
    base = Linker.load(root / "base")
    text = "Patients with breast cancer developed tumours."
    linked = base.link_in_context([MentionSpan("breast cancer", 14, 27)], text, k=5)[0]
    assert linked.ranked_by == "retriever" and linked.typing is None
    assert [c.concept_id for c in linked.candidates] == [c.concept_id for c in base.link_mentions(["breast cancer"], text, k=5)[0]]


def test_what_a_calibration_is_fitted_on_is_scored_as_the_panel_serves_it(trained) -> None:  # type: ignore[no-untyped-def]
    """Gold and NIL examples alike: by the re-ranker in context where there is one (its r is on another scale
    than the retriever's S), by the retriever otherwise."""
    root, folder, _ = trained
    text = "Patients with breast cancer developed tumours. Chorea in Huntington disease progressed."
    spans = [MentionSpan("breast cancer", 14, 27), MentionSpan("Huntington disease")]
    reranking = Linker.load(folder)
    assert reranking.reranker is not None
    with torch.no_grad():
        reranking.reranker.model.w_f.fill_(0.5)  # an order of its own, whatever epoch the held-out fold chose
    served = reranking.ranked_as_served(spans, text, k=5)
    linked = reranking.link_in_context(spans, text, k=5)
    assert [[[(c.concept_id, c.score) for c in part] for part in parts] for parts in served] == \
        [[[(c.concept_id, c.score) for c in one.candidates]] for one in linked]
    queries = reranking.queries_for([s.text for s in spans], text)
    assert [[c.score for c in part] for parts in served for part in parts] != \
        [[c.score for c in part] for parts in reranking.link_queries(queries, 5) for part in parts]
    base = Linker.load(root / "base")
    assert base.ranked_as_served(spans, text, k=5) == base.link_queries(base.queries_for([s.text for s in spans], text), 5)


def test_a_corrupted_or_foreign_reranker_is_refused_with_its_reason(trained, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root, folder, _ = trained
    broken = tmp_path / "broken"
    shutil.copytree(folder, broken)
    (broken / "rerank" / "model.pt").write_bytes(b"not a checkpoint")
    linker = Linker.load(broken)
    assert linker.reranker is None and linker.reranker_problem and "corrupted" in linker.reranker_problem
    assert linker.link_in_context([MentionSpan("myeloma")], "myeloma", k=3)[0].ranked_by == "retriever"
    with pytest.raises(RerankerError, match="corrupted"):
        Linker.load(broken, strict_rerank=True)

    # The same encoder over a dictionary with one more concept: another dictionary version.
    other = Linker.load(root / "base")
    other.table.add([("porphyria", "D011164")])
    Linker(other.table, other.sparse, other.encoder, other.index, other.config).save(tmp_path / "foreign")
    shutil.copytree(folder / "rerank", tmp_path / "foreign" / "rerank")
    linker = Linker.load(tmp_path / "foreign")
    assert linker.reranker is None and "another dictionary" in (linker.reranker_problem or "")


def test_homonyms_are_named_on_the_candidates_that_share_a_name(minilm, tiny_table: NameTable) -> None:
    table = tiny_table.copy()
    table.add([("breast cancer", "OMIM:114480")])
    linker = Linker.build(table, None, LinkerConfig(text=table.cfg))
    linked = linker.link_in_context([MentionSpan("breast cancer")], "breast cancer", k=3)[0]
    shared = dict(zip((c.concept_id for c in linked.candidates), linked.homonyms, strict=True))
    assert shared["D001943"] == ("OMIM:114480",) and shared["OMIM:114480"] == ("D001943",)


def _write_pubtator(docs: list[PubTatorDocument], path: Path) -> Path:
    lines = []
    for d in docs:
        lines += [f"{d.pmid}|t|{d.title}", f"{d.pmid}|a|{d.abstract}"]
        lines += [f"{d.pmid}\t{m.start}\t{m.end}\t{m.text}\t{m.mention_type}\t{m.ids_raw}" for m in d.mentions]
        lines.append("")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_the_cli_trains_a_reranker_and_evaluates_it_in_context(trained, tiny_dictionary_file: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from linker.cli import main

    root, _, _ = trained
    train_file = _write_pubtator(_docs(12), tmp_path / "train.txt")
    dev_file = _write_pubtator(_docs(3), tmp_path / "dev.txt")
    out = tmp_path / "cli-latte"
    assert main(["train-rerank", "--dictionary", str(tiny_dictionary_file), "--train", str(train_file),
                 "--base", str(root / "base"), "--out", str(out), "--dev", str(dev_file), "--epochs", "2",
                 "--latent-types", "8", "--hidden", "8", "--top-k", "4", "--without", "latent"]) == 0
    linker = Linker.load(out, strict_rerank=True)
    assert linker.reranker is not None and linker.reranker.model.config.use_latent is False
    assert json.loads((out / "training_report.json").read_text())["method"] == "latte"
    assert main(["evaluate", "--artifact", str(out), "--eval", str(dev_file)]) == 0


def test_token_states_are_cached_bounded_and_safe_to_share_between_threads(minilm) -> None:  # type: ignore[no-untyped-def]
    from concurrent.futures import ThreadPoolExecutor

    from linker.rerank.context import MentionContext
    from linker.rerank.states import TokenStates

    states = TokenStates(minilm, cache_size=3)
    contexts = [MentionContext(q, "patients with", q, "were seen") for q in ("asthma", "gout", "myeloma", "lupus")]
    first = states.mentions(contexts[:2])
    assert [s.shape[1] for s, _ in first] == [minilm.dim] * 2
    assert states.mentions(contexts[:1])[0][0] is first[0][0]  # a cache hit: the very tensor
    states.mentions(contexts[2:])  # four contexts in a cache of three: the least recently used goes
    assert list(states._mention_cache) == contexts[:1] + contexts[2:]
    # Threads sharing the linker look up, encode and evict at once (a web process's threads): no KeyError, and
    # every answer equals the one-thread answer.
    names = [f"name {i}" for i in range(12)]
    alone = [s for s, _ in TokenStates(minilm, cache_size=100).names(names)]
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda i: states.names(names[i % 5 : i % 5 + 6]), range(16)))
    for i, answer in enumerate(answers):
        for s, want in zip((s for s, _ in answer), alone[i % 5 : i % 5 + 6], strict=True):
            assert torch.allclose(s.float(), want.float(), atol=1e-2)
    assert len(states._name_cache) <= 3
