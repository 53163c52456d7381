"""Chunking by the embedding model's own tokens: overlap, exact spans, heading paths, code fences, pages."""

from __future__ import annotations

import itertools

from services.indexer.chunking import chunk_text, window_spans
from shared.embedding import OnnxEmbedder
from shared.markdown_source import fenced_ranges

PROSE = " ".join(f"Sentence number {i} explains a detail of sourdough fermentation." for i in range(60))


def stitch(text: str, spans: list[tuple[int, int]]) -> str:
    """Join neighbouring chunks back together without repeating their overlap."""
    out, end = [], spans[0][0]
    for start, stop in spans:
        out.append(text[max(start, end) : stop])
        end = max(end, stop)
    return "".join(out)


def test_windows_hold_at_most_max_tokens_and_overlap_by_about_the_setting(embedder: OnnxEmbedder) -> None:
    chunks = chunk_text(PROSE, embedder.token_spans, max_tokens=50, overlap=10, markdown=False)
    assert len(chunks) > 5
    for chunk in chunks:
        assert len(embedder.token_spans(PROSE[chunk.start : chunk.end])) <= 50
    for before, after in itertools.pairwise(chunks):
        shared_text = PROSE[after.start : before.end]
        assert after.start < before.end
        assert 10 <= len(embedder.token_spans(shared_text)) <= 15


def test_windows_start_and_end_between_words(embedder: OnnxEmbedder) -> None:
    chunks = chunk_text(PROSE, embedder.token_spans, max_tokens=37, overlap=9, markdown=False)
    for chunk in chunks:
        assert chunk.start == 0 or PROSE[chunk.start - 1] == " "
        assert chunk.end == len(PROSE) or PROSE[chunk.end] == " "


def test_neighbours_stitch_back_into_the_exact_source_without_the_overlap(embedder: OnnxEmbedder) -> None:
    chunks = chunk_text(PROSE, embedder.token_spans, max_tokens=40, overlap=8, markdown=False)
    assert stitch(PROSE, [(c.start, c.end) for c in chunks]) == PROSE.strip()


def test_each_chunk_keeps_the_heading_path_where_it_starts(embedder: OnnxEmbedder) -> None:
    text = (
        "# Bread\n\nIntro.\n\n## Starter\n\nFeed it daily.\n\n### Rye\n\nRye is thirsty.\n\n## Oven\n\nHot.\n"
    )
    chunks = chunk_text(text, embedder.token_spans, max_tokens=60, overlap=5)
    paths = {text[c.start : c.end].splitlines()[-1]: c.heading_path for c in chunks}
    assert paths["Feed it daily."] == ("Bread", "Starter")
    assert paths["Rye is thirsty."] == ("Bread", "Starter", "Rye")
    assert paths["Hot."] == ("Bread", "Oven")


def test_a_hash_line_inside_a_code_fence_is_not_a_heading(embedder: OnnxEmbedder) -> None:
    text = "# Setup\n\n```bash\n# install the tools\npip install x\n```\n\nDone.\n"
    chunks = chunk_text(text, embedder.token_spans, max_tokens=60, overlap=5)
    assert all(c.heading_path == ("Setup",) for c in chunks)


def test_a_window_ends_before_a_code_fence_rather_than_inside_it(embedder: OnnxEmbedder) -> None:
    prose = " ".join(f"word{i}" for i in range(30))
    code = "```python\n" + "\n".join(f"value_{i} = compute({i})" for i in range(6)) + "\n```"
    text = f"{prose}\n\n{code}\n\nAfter the code comes more prose to finish the section."
    fence = fenced_ranges(text)[0]
    chunks = chunk_text(text, embedder.token_spans, max_tokens=80, overlap=10)
    assert len(chunks) >= 2
    for chunk in chunks:
        splits = fence[0] < chunk.end < fence[1] or fence[0] < chunk.start < fence[1]
        assert not splits, f"chunk {chunk} splits the fence {fence}"
    assert any(c.start <= fence[0] and c.end >= fence[1] for c in chunks)


def test_a_fence_longer_than_a_window_is_split_because_it_must_be(embedder: OnnxEmbedder) -> None:
    code = "```\n" + "\n".join(f"line_{i} = {i}" for i in range(80)) + "\n```"
    chunks = chunk_text(code, embedder.token_spans, max_tokens=40, overlap=5)
    assert len(chunks) > 3
    assert stitch(code, [(c.start, c.end) for c in chunks]) == code


def test_pdf_pages_are_separate_sections_so_no_chunk_spans_two_pages(embedder: OnnxEmbedder) -> None:
    pages = ["Alpha page text. " * 20, "Beta page text. " * 20]
    text = "\n\n".join(pages)
    ranges = [(0, len(pages[0])), (len(pages[0]) + 2, len(text))]
    chunks = chunk_text(text, embedder.token_spans, 30, 5, markdown=False, page_ranges=ranges)
    for chunk in chunks:
        assert any(lo <= chunk.start and chunk.end <= hi for lo, hi in ranges)


def test_window_spans_always_make_progress_when_overlap_is_large() -> None:
    tokens = [(i * 2, i * 2 + 1) for i in range(20)]
    windows = window_spans(tokens, max_tokens=4, overlap=10)
    assert windows[-1][1] == tokens[-1][1]
    assert len(windows) <= 20
