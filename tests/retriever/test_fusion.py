"""Fusion on hand-computed examples: weighted RRF and the min-max α-blend."""

from __future__ import annotations

from dataclasses import replace

import pytest

from services.retriever.fusion import (
    alpha_blend,
    in_documents,
    legs_agree,
    min_max,
    reciprocal_rank_fusion,
)
from services.retriever.search import Retriever
from shared.contracts import Chunk, HydeMode, Plan, SearchFilters, SourceKind
from shared.interfaces import Hit
from tests.retriever.conftest import retrieval_config


def hit(chunk_id: str, score: float = 0.0) -> Hit:
    chunk = Chunk(
        id=chunk_id,
        document_id="doc",
        ordinal=0,
        text="x",
        char_start=0,
        char_end=1,
        title="t",
        source_uri="/t.md",
        kind=SourceKind.MARKDOWN,
    )
    return Hit(chunk=chunk, score=score)


def ids(candidates: list) -> list[str]:
    return [c.chunk.id for c in candidates]


def test_rrf_sums_reciprocal_ranks_and_keeps_each_legs_rank() -> None:
    fused = reciprocal_rank_fusion(
        {"dense:0": [hit("x", 0.9), hit("y", 0.8), hit("z", 0.7)], "bm25": [hit("z", 7.0), hit("x", 3.0)]},
        k=60,
    )
    assert ids(fused) == ["x", "z", "y"]
    by_id = {c.chunk.id: c for c in fused}
    assert by_id["x"].fused_score == pytest.approx(1 / 61 + 1 / 62)
    assert by_id["z"].fused_score == pytest.approx(1 / 63 + 1 / 61)
    assert by_id["y"].fused_score == pytest.approx(1 / 62)
    assert by_id["z"].ranks == {"dense:0": 3, "bm25": 1}
    assert by_id["z"].scores == {"dense:0": 0.7, "bm25": 7.0}


def test_rrf_weights_apply_per_leg_family() -> None:
    legs = {"dense:0": [hit("a"), hit("b")], "bm25": [hit("b")]}
    assert ids(reciprocal_rank_fusion(legs, k=1)) == ["b", "a"]  # b: 1/3 + 1/2 > a: 1/2
    weighted = reciprocal_rank_fusion(legs, k=1, weights={"dense": 1.0, "bm25": 0.2})
    assert ids(weighted) == ["a", "b"]  # b: 1/3 + 0.2/2 = 0.433 < a: 0.5
    assert weighted[1].fused_score == pytest.approx(1 / 3 + 0.1)


def test_rrf_counts_every_dense_variation_as_its_own_leg() -> None:
    fused = reciprocal_rank_fusion(
        {"dense:0": [hit("a"), hit("b")], "dense:1": [hit("b"), hit("a")], "bm25": [hit("c")]},
        k=0,
        weights={"dense": 1.0, "bm25": 1.0},
    )
    assert ids(fused) == ["a", "b", "c"]  # a and b tie at 1 + 1/2: first seen wins; c scores 1
    assert fused[0].fused_score == pytest.approx(1.5)


def test_min_max_scales_to_unit_range_and_constant_leg_gives_ones() -> None:
    assert min_max([0.9, 0.7, 0.5]) == pytest.approx([1.0, 0.5, 0.0])
    assert min_max([2.0, 2.0]) == [1.0, 1.0]


def test_alpha_blend_mixes_normalised_dense_and_lexical_scores() -> None:
    legs = {
        "dense:0": [hit("a", 0.9), hit("b", 0.7), hit("c", 0.5)],
        "bm25": [hit("c", 10.0), hit("a", 4.0), hit("d", 2.0)],
    }
    fused = alpha_blend(legs, alpha=0.75)
    scores = {c.chunk.id: c.fused_score for c in fused}
    # dense normalised: a 1, b 0.5, c 0; bm25 normalised: c 1, a 0.25, d 0
    assert scores == pytest.approx({"a": 0.8125, "b": 0.375, "c": 0.25, "d": 0.0})
    assert ids(fused) == ["a", "b", "c", "d"]


def test_alpha_blend_takes_the_best_dense_leg_and_best_lexical_leg() -> None:
    legs = {
        "dense:0": [hit("a", 0.8), hit("b", 0.4)],
        "hyde": [hit("b", 0.6), hit("a", 0.2)],
        "exact": [hit("b", 2.0), hit("a", 1.0)],
    }
    scores = {c.chunk.id: c.fused_score for c in alpha_blend(legs, alpha=0.5)}
    # a: dense max(1, 0) = 1, lexical 0 -> 0.5; b: dense max(0, 1) = 1, lexical 1 -> 1.0
    assert scores == pytest.approx({"a": 0.5, "b": 1.0})


def doc_hit(document_id: str, score: float) -> Hit:
    found = hit(f"{document_id}#0", score)
    return Hit(chunk=found.chunk.model_copy(update={"document_id": document_id}), score=score)


def test_legs_agree_when_dense_and_bm25_share_enough_of_their_first_documents() -> None:
    dense = [doc_hit("a", 0.9), doc_hit("b", 0.8), doc_hit("c", 0.7)]
    shares_c = {"dense:0": dense, "bm25": [doc_hit("x", 9.0), doc_hit("c", 5.0)]}
    assert legs_agree(shares_c, top=3, min_shared=1)
    assert not legs_agree(shares_c, top=2, min_shared=1), "c is third in dense: outside its first 2"
    assert not legs_agree(shares_c, top=3, min_shared=2)
    assert legs_agree(shares_c, top=1, min_shared=0), "a guard of 0 never falls back"
    assert legs_agree({"dense:0": dense, "bm25": []}, top=3, min_shared=1), "no keyword leg: nothing to doubt"


def test_search_falls_back_to_dense_alone_when_the_legs_disagree(corpus) -> None:
    plan = Plan(variations=["global interpreter lock threads"])
    retriever = Retriever(corpus.store, corpus.embedder)
    config = retrieval_config(pool=10, keep=5, hyde_mode=HydeMode.OFF, fusion="alpha", alpha=0.5)

    _, agreeing = retriever.search(plan, replace(config, guard_min_shared=1))
    assert agreeing.fusion == "α-blend (α=0.5)", "dense and BM25 both find the GIL notes first"

    unreachable = replace(config, guard_top=2, guard_min_shared=3)  # two documents never share three
    candidates, report = retriever.search(plan, unreachable)
    assert report.fusion.startswith("dense only (α=1): dense and BM25 share fewer than 3")
    dense_leg = retriever.dense(plan.variations[0], replace(config, pool=10), SearchFilters())
    assert [c.chunk.id for c in candidates] == [hit.chunk.id for hit in dense_leg][:5]


def test_in_documents_adds_the_bonus_to_lead_chunks_only_and_re_sorts() -> None:
    lead = hit("lead", 0.50)
    later = Hit(chunk=hit("later", 0.58).chunk.model_copy(update={"ordinal": 3}), score=0.58)
    favoured = in_documents([later, lead], lead_bonus=0.1, centroid_weight=0.0, centroid_scores={})
    assert ids(favoured) == ["lead", "later"]
    assert favoured[0].score == pytest.approx(0.60) and favoured[1].score == pytest.approx(0.58)
    assert in_documents([later, lead], 0.0, 0.0, {}) == [later, lead], "zeros leave the store's order"


def test_in_documents_blends_each_chunk_with_its_documents_centroid() -> None:
    on_topic = doc_hit("about-it", 0.50)  # a lead chunk of a document about the question
    stray = Hit(chunk=doc_hit("mentions-it", 0.60).chunk.model_copy(update={"ordinal": 4}), score=0.60)
    centroids = {"about-it": 0.55, "mentions-it": 0.20}
    blended = in_documents([stray, on_topic], lead_bonus=0.0, centroid_weight=0.5, centroid_scores=centroids)
    assert [h.chunk.document_id for h in blended] == ["about-it", "mentions-it"]
    assert blended[0].score == pytest.approx(0.525) and blended[1].score == pytest.approx(0.40)
    alone = in_documents([stray, on_topic], 0.0, 0.5, {})
    assert [h.score for h in alone] == [pytest.approx(0.60), pytest.approx(0.50)], "no centroid: the chunk"


def test_search_fuses_the_dense_leg_with_lead_chunks_favoured(corpus) -> None:
    plan = Plan(variations=["global interpreter lock threads"])
    retriever = Retriever(corpus.store, corpus.embedder)
    config = retrieval_config(
        pool=10, keep=10, hyde_mode=HydeMode.OFF, legs=frozenset({"dense"}), centroid_weight=0.0
    )
    plain, _ = retriever.search(plan, config)
    favoured, _ = retriever.search(plan, replace(config, lead_bonus=1.0))
    leads_first = sorted(plain, key=lambda c: c.chunk.ordinal != 0)  # stable: store order within each
    assert [c.chunk.id for c in favoured] == [c.chunk.id for c in leads_first]


def test_a_dense_leg_weighing_only_centroids_ranks_documents_by_their_centroid(corpus) -> None:
    question = "global interpreter lock threads"
    retriever = Retriever(corpus.store, corpus.embedder)
    config = retrieval_config(pool=10, hyde_mode=HydeMode.OFF, lead_bonus=0.0, centroid_weight=1.0)
    documents = list(
        dict.fromkeys(hit.chunk.document_id for hit in retriever.dense(question, config, SearchFilters()))
    )
    centroids = corpus.store.document_centroids(documents)
    vector = corpus.embedder.embed_query(question)
    assert len(documents) >= 3
    assert documents == sorted(documents, key=lambda document_id: -float(centroids[document_id] @ vector))
