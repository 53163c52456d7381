"""Split extracted text into overlapping windows of the embedding model's tokens.

Each chunk is an exact character span of the text (``text[start:end]``), so neighbours can be
stitched back without their overlap and a citation can point at the very characters it quotes.
Sections start at Markdown headings (and at page breaks for PDFs, so no chunk spans two pages);
every chunk keeps the heading path in effect where it starts. A window that would end inside a
code fence ends before the fence instead, unless the fence alone is longer than a window.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass

from shared.interfaces import TokenSpans
from shared.markdown_source import fenced_ranges

HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.MULTILINE)

Span = tuple[int, int]


@dataclass(frozen=True)
class ChunkSpan:
    start: int
    end: int
    heading_path: tuple[str, ...]


@dataclass(frozen=True)
class Section:
    start: int
    end: int
    heading_path: tuple[str, ...]


def markdown_sections(text: str, start: int = 0, end: int | None = None) -> list[Section]:
    """Sections of ``text[start:end]`` between headings (outside code fences), with heading paths."""
    end = len(text) if end is None else end
    fences = fenced_ranges(text)
    path: list[tuple[int, str]] = []
    sections: list[Section] = []
    current: tuple[str, ...] = ()
    for match in HEADING.finditer(text, start, end):
        if any(lo <= match.start() < hi for lo, hi in fences):
            continue
        if match.start() > start:
            sections.append(Section(start, match.start(), current))
        level = len(match.group(1))
        path = [(lvl, title) for lvl, title in path if lvl < level] + [(level, match.group(2).strip())]
        current = tuple(title for _, title in path)
        start = match.start()
    if start < end:
        sections.append(Section(start, end, current))
    return sections


def _fence_cut(
    tokens: Sequence[Span], first: int, last: int, fences: Sequence[Span], max_tokens: int, overlap: int
) -> tuple[int, int] | None:
    """If cutting after token ``last`` splits a fence that starts inside the window, the window's new
    last token (just before the fence) and where the next window starts; ``None`` to cut as planned."""
    cut = tokens[last][1]
    for lo, hi in fences:
        if not (lo < cut < hi and tokens[last + 1][0] < hi):
            continue
        before = bisect.bisect_right([end for _, end in tokens], lo) - 1
        if before < first or tokens[first][0] >= lo:
            return None
        fence_first = before + 1
        fence_last = bisect.bisect_left([start for start, _ in tokens], hi) - 1
        with_overlap = max(first + 1, fence_first - overlap)
        next_first = with_overlap if fence_last - with_overlap < max_tokens else fence_first
        return before, next_first
    return None


def _joined(tokens: Sequence[Span], index: int) -> bool:
    """Whether token ``index`` continues the word before it (a word piece or punctuation, no space)."""
    return 0 < index < len(tokens) and tokens[index][0] == tokens[index - 1][1]


def window_spans(
    tokens: Sequence[Span], max_tokens: int, overlap: int, fences: Sequence[Span] = ()
) -> list[Span]:
    """Token windows of at most ``max_tokens`` that overlap by about ``overlap`` tokens, as character
    spans. Windows start and end between words, never inside one, unless a word exceeds a window."""
    windows: list[Span] = []
    first = 0
    while first < len(tokens):
        last = min(first + max_tokens, len(tokens)) - 1
        while last > first and _joined(tokens, last + 1):
            last -= 1
        next_first = max(first + 1, last + 1 - overlap)
        while next_first > first + 1 and _joined(tokens, next_first):
            next_first -= 1
        if last < len(tokens) - 1:
            moved = _fence_cut(tokens, first, last, fences, max_tokens, overlap)
            if moved is not None:
                last, next_first = moved
        windows.append((tokens[first][0], tokens[last][1]))
        if last == len(tokens) - 1:
            break
        first = next_first
    return windows


def chunk_text(
    text: str,
    token_spans: TokenSpans,
    max_tokens: int,
    overlap: int,
    markdown: bool = True,
    page_ranges: Sequence[Span] = (),
) -> list[ChunkSpan]:
    """Chunk spans over ``text``; whitespace-only sections produce none.

    ``page_ranges`` (for PDFs) make each page its own section, so every chunk lies on one page.
    """
    regions = list(page_ranges) or [(0, len(text))]
    sections: list[Section] = []
    for lo, hi in regions:
        sections += markdown_sections(text, lo, hi) if markdown else [Section(lo, hi, ())]
    fences = fenced_ranges(text) if markdown else []
    chunks: list[ChunkSpan] = []
    for section in sections:
        body = text[section.start : section.end]
        local_fences = [
            (max(lo, section.start) - section.start, min(hi, section.end) - section.start)
            for lo, hi in fences
            if lo < section.end and hi > section.start
        ]
        for lo, hi in window_spans(token_spans(body), max_tokens, overlap, local_fences):
            chunks.append(ChunkSpan(section.start + lo, section.start + hi, section.heading_path))
    return chunks
