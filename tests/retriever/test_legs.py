"""Each leg against a real LanceDB store, real ONNX embeddings and real files searched by ripgrep."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from services.retriever.exact import ExactSearcher, find_rg
from services.retriever.search import Retriever
from shared.contracts import HydeMode, Plan, SearchFilters, SourceKind
from tests.retriever.conftest import retrieval_config


@pytest.fixture(scope="module")
def exact(corpus) -> ExactSearcher:
    return ExactSearcher(corpus.store, find_rg())


def dense(corpus, text: str, filters: SearchFilters | None = None):
    return corpus.store.dense_search(corpus.embedder.embed_query(text), 10, filters)


def test_dense_leg_finds_the_passage_by_meaning(corpus) -> None:
    hits = dense(corpus, "why don't my CPU-heavy threads run in parallel?")
    assert hits[0].chunk.source_uri.endswith("python/gil.md")


def test_bm25_leg_matches_chunk_text_and_title(corpus) -> None:
    assert corpus.store.keyword_search("sourdough starter", 10)[0].chunk.source_uri.endswith("bread.md")
    by_title = corpus.store.keyword_search("Asyncio notes", 10)
    assert by_title[0].chunk.source_uri.endswith("asyncio.md")


def test_exact_leg_maps_a_match_after_front_matter_and_multibyte_text_to_its_chunk(corpus, exact) -> None:
    hits = exact.search(["PYTHONMALLOC"], 10)
    assert len(hits) == 1
    chunk = hits[0].chunk
    body = corpus.bodies["python/gil.md"]
    offset = body.index("PYTHONMALLOC")
    assert chunk.char_start <= offset < chunk.char_end
    assert chunk.text[offset - chunk.char_start :].startswith("PYTHONMALLOC")
    raw = corpus.path("python/gil.md").read_text()
    assert chunk.body_start == len(raw) - len(body)  # the front matter, as the indexer stored it
    assert raw.encode().index(b"PYTHONMALLOC") != raw.index("PYTHONMALLOC")  # multi-byte text before it


def test_exact_leg_ranks_chunks_holding_more_keywords_first(corpus, exact) -> None:
    hits = exact.search(["asyncio.run()", "RuntimeError", "TaskGroup"], 10)
    assert hits[0].chunk.source_uri.endswith("asyncio.md")
    assert "asyncio.run()" in hits[0].chunk.text and "RuntimeError" in hits[0].chunk.text
    assert hits[0].score > hits[-1].score


def test_exact_leg_matches_whole_words_only(corpus, exact) -> None:
    assert exact.search(["ourdough"], 10) == [], "inside 'sourdough', not a word of its own"
    assert exact.search(["sourdough"], 10)[0].chunk.source_uri.endswith("bread.md")


def test_exact_leg_finds_a_phrase_a_line_break_splits(corpus, exact) -> None:
    hits = exact.search(["starter daily"], 10)  # "Feed the starter\ndaily with equal weights"
    assert [h.chunk.source_uri for h in hits][:1] == [str(corpus.path("cooking/bread.md"))]
    assert exact.search(["starter   weekly"], 10) == []


def test_exact_leg_reads_back_only_the_files_holding_the_most_keywords(corpus, exact) -> None:
    everywhere = exact.search(["the"], 50)
    assert len({hit.chunk.source_uri for hit in everywhere}) > 2, "a word found in many files"
    best = exact.search(["the", "TaskGroup"], 1)
    assert [hit.chunk.source_uri.rsplit("/", 1)[-1] for hit in best] == ["asyncio.md"]


def test_exact_leg_ignores_words_only_in_front_matter(corpus, exact) -> None:
    assert exact.search(["2024-03-01"], 10) == []


def test_exact_leg_drops_matches_the_indexed_text_no_longer_holds(corpus, exact) -> None:
    path = corpus.path("garden/tomatoes.md")
    original = path.read_text()
    try:
        edited = original.replace("Pinch the side shoots", "Remove the suckers")
        path.write_text(edited + "\nThe word suckers now also ends the file.\n")
        assert exact.search(["suckers"], 10) == []
    finally:
        path.write_text(original)


def test_filters_apply_inside_every_leg(corpus, exact) -> None:
    cooking = SearchFilters(spaces=["cooking"])
    assert {h.chunk.space for h in dense(corpus, "threads and cores", cooking)} == {"cooking"}
    assert corpus.store.keyword_search("threads", 10, cooking) == []
    assert exact.search(["PYTHONMALLOC"], 10, cooking) == []
    assert exact.search(["Dutch oven"], 10, cooking)[0].chunk.space == "cooking"

    text_only = SearchFilters(kinds=[SourceKind.TEXT])
    assert {h.chunk.kind for h in dense(corpus, "trains to Kyoto", text_only)} == {SourceKind.TEXT}
    assert exact.search(["Shinkansen"], 10, text_only)
    assert exact.search(["TaskGroup"], 10, text_only) == []

    under_python = SearchFilters(path_prefix=str(corpus.root / "python") + "/")
    assert all("/python/" in h.chunk.source_uri for h in dense(corpus, "bread", under_python))
    assert exact.search(["Shinkansen"], 10, under_python) == []

    in_2024 = SearchFilters(date_from=datetime(2024, 1, 1, tzinfo=UTC), date_to=datetime(2024, 12, 31))
    assert {h.chunk.document_date.year for h in dense(corpus, "bread", in_2024)} == {2024}
    assert corpus.store.keyword_search("sourdough", 10, in_2024) == []
    assert exact.search(["sourdough"], 10, in_2024) == []
    assert exact.search(["TaskGroup"], 10, in_2024)


def test_a_failing_exact_leg_is_reported_and_the_other_legs_still_answer(corpus, tmp_path) -> None:
    broken = ExactSearcher(corpus.store, tmp_path / "no-such-rg")
    plan = Plan(variations=["PYTHONMALLOC debug allocator"], hard_keywords=["PYTHONMALLOC"])
    candidates, report = Retriever(corpus.store, corpus.embedder, broken).search(
        plan, retrieval_config(pool=10, keep=5, hyde_mode=HydeMode.OFF)
    )
    assert any(note.startswith("exact leg failed") for note in report.notes)
    assert report.legs["exact"] == 0 and report.legs["dense:0"] > 0
    assert candidates[0].chunk.source_uri.endswith("gil.md")


def test_the_exact_leg_stops_at_its_own_pool_while_the_other_legs_fill_theirs(corpus, exact) -> None:
    plan = Plan(variations=["the notes"], hard_keywords=["the"])  # a word in many files
    config = retrieval_config(pool=10, keep=10, hyde_mode=HydeMode.OFF, exact_pool=1)
    _, report = Retriever(corpus.store, corpus.embedder, exact).search(plan, config)
    assert report.legs["exact"] == 1, "one file read back, its best chunk kept"
    assert report.legs["dense:0"] > 1 and report.legs["bm25"] > 1
