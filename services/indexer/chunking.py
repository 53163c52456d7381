"""Split extracted text into overlapping windows of the embedding model's tokens.

Each chunk is an exact character span of the text (``text[start:end]``), so neighbours can be
stitched back without their overlap and a citation can point at the very characters it quotes.
Sections start at Markdown headings and every chunk keeps the heading path in effect where it starts.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
FENCE = re.compile(r"^(```|~~~)", re.MULTILINE)


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


def fenced_ranges(text: str) -> list[tuple[int, int]]:
    """Character ranges inside code fences, where a ``#`` line is code, not a heading."""
    marks = [m.start() for m in FENCE.finditer(text)]
    if len(marks) % 2:
        marks.append(len(text))
    return list(zip(marks[::2], marks[1::2], strict=True))


def markdown_sections(text: str) -> list[Section]:
    """Sections between headings (outside code fences), each with its heading path."""
    fences = fenced_ranges(text)
    path: list[tuple[int, str]] = []
    sections: list[Section] = []
    start = 0
    current: tuple[str, ...] = ()
    for match in HEADING.finditer(text):
        if any(lo <= match.start() < hi for lo, hi in fences):
            continue
        if match.start() > start:
            sections.append(Section(start, match.start(), current))
        level = len(match.group(1))
        path = [(lvl, title) for lvl, title in path if lvl < level] + [(level, match.group(2).strip())]
        current = tuple(title for _, title in path)
        start = match.start()
    if start < len(text):
        sections.append(Section(start, len(text), current))
    return sections


def window_spans(token_spans: list[tuple[int, int]], max_tokens: int, overlap: int) -> list[tuple[int, int]]:
    """Token windows of ``max_tokens`` that overlap by ``overlap`` tokens, as character spans."""
    if not token_spans:
        return []
    step = max(1, max_tokens - overlap)
    windows = []
    for first in range(0, len(token_spans), step):
        last = min(first + max_tokens, len(token_spans)) - 1
        windows.append((token_spans[first][0], token_spans[last][1]))
        if last == len(token_spans) - 1:
            break
    return windows


def chunk_text(
    text: str,
    token_spans: Callable[[str], list[tuple[int, int]]],
    max_tokens: int,
    overlap: int,
    markdown: bool = True,
) -> list[ChunkSpan]:
    """Chunk spans over ``text``; empty sections (whitespace only) produce none."""
    sections = markdown_sections(text) if markdown else [Section(0, len(text), ())]
    chunks: list[ChunkSpan] = []
    for section in sections:
        body = text[section.start : section.end]
        for lo, hi in window_spans(token_spans(body), max_tokens, overlap):
            chunks.append(ChunkSpan(section.start + lo, section.start + hi, section.heading_path))
    return chunks
