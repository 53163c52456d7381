"""The retrieval legs and their fusion for one question."""

from __future__ import annotations

from services.retriever.fusion import reciprocal_rank_fusion
from shared.contracts import Candidate, Plan, SearchFilters
from shared.interfaces import Embedder, Hit, VectorStore


def run_legs(
    plan: Plan, store: VectorStore, embedder: Embedder, pool: int, filters: SearchFilters
) -> dict[str, list[Hit]]:
    """One dense leg per variation and one BM25 leg over the question's words."""
    legs: dict[str, list[Hit]] = {}
    for index, variation in enumerate(plan.variations):
        legs[f"dense:{index}"] = store.dense_search(embedder.embed_query(variation), pool, filters)
    legs["bm25"] = store.keyword_search(plan.variations[0], pool, filters)
    return legs


def search_candidates(
    plan: Plan,
    store: VectorStore,
    embedder: Embedder,
    pool: int,
    keep: int,
    filters: SearchFilters,
    rrf_k: int,
) -> tuple[list[Candidate], dict[str, int]]:
    legs = run_legs(plan, store, embedder, pool, filters)
    fused = reciprocal_rank_fusion(legs, rrf_k)
    return fused[:keep], {leg: len(hits) for leg, hits in legs.items()}
