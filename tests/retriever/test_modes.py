"""Search modes without synthesis: semantic, exact, hybrid and auto on the real corpus."""

from __future__ import annotations

import pytest

from services.retriever.exact import ExactSearcher, find_rg
from services.retriever.modes import looks_exact, resolve_mode, run_search
from services.retriever.search import Retriever
from shared.contracts import SearchFilters, SearchMode, SearchRequest
from tests.retriever.conftest import retrieval_config


@pytest.fixture(scope="module")
def retriever(corpus) -> Retriever:
    return Retriever(corpus.store, corpus.embedder, ExactSearcher(corpus.store, find_rg()))


BASE = retrieval_config(pool=20, keep=10, weights={"dense": 1.0, "bm25": 0.5, "exact": 0.5})


def search(retriever: Retriever, query: str, mode: SearchMode, **options):
    return run_search(SearchRequest(query=query, mode=mode, **options), retriever, BASE, max_keywords=6)


@pytest.mark.parametrize(
    ("query", "exact"),
    [
        ("PYTHONMALLOC", True),
        ("asyncio.TaskGroup", True),
        ('"Event loop is closed"', True),
        ("RuntimeError", True),
        ("how do I feed a sourdough starter", False),
        ("bread", False),
    ],
)
def test_auto_picks_exact_for_short_identifier_like_queries(query: str, exact: bool) -> None:
    assert looks_exact(query) is exact
    assert resolve_mode(query, SearchMode.AUTO) is (SearchMode.EXACT if exact else SearchMode.HYBRID)


def test_exact_mode_finds_the_verbatim_identifier_only(retriever) -> None:
    result = search(retriever, "sys.setswitchinterval", SearchMode.EXACT)
    assert result.resolved_mode is SearchMode.EXACT
    assert list(result.legs) == ["exact"]
    assert [c.chunk.source_uri.rsplit("/", 1)[-1] for c in result.candidates] == ["gil.md"]


def test_semantic_mode_uses_only_the_dense_leg(retriever) -> None:
    result = search(retriever, "bullet trains between cities", SearchMode.SEMANTIC, limit=3)
    assert list(result.legs) == ["dense:0"]
    assert result.candidates[0].chunk.source_uri.endswith("japan.txt")
    assert len(result.candidates) == 3


def test_hybrid_mode_fuses_dense_bm25_and_exact_and_says_how_each_was_found(retriever) -> None:
    result = search(retriever, "what does asyncio.run() do to the event loop", SearchMode.HYBRID)
    assert {"dense:0", "bm25", "exact"} <= set(result.legs)
    assert result.candidates[0].chunk.source_uri.endswith("asyncio.md")
    exact_match = next(c for c in result.candidates if "asyncio.run()" in c.chunk.text)
    assert exact_match.chunk.source_uri.endswith("asyncio.md")
    assert {"dense:0", "bm25", "exact"} <= set(exact_match.ranks), "found by every leg, and says so"


def test_auto_falls_back_to_hybrid_when_exact_finds_nothing(retriever) -> None:
    result = search(retriever, "SourdoughStarterV2", SearchMode.AUTO)
    assert result.resolved_mode is SearchMode.HYBRID
    assert any("exact found nothing" in note for note in result.notes)


def test_modes_honour_filters_and_neighbour_expansion(retriever, corpus) -> None:
    result = search(
        retriever,
        "threads",
        SearchMode.HYBRID,
        filters=SearchFilters(spaces=["python"]),
        k_adjacent=1,
    )
    assert result.candidates and all(c.chunk.space == "python" for c in result.candidates)
    for candidate in result.candidates:
        body = corpus.bodies[candidate.chunk.source_uri.split("/notes/", 1)[1]]
        assert body[candidate.text_start : candidate.text_start + len(candidate.text)] == candidate.text
