"""Sentences of a source text, each with its exact span, whatever the line wrapping.

Two maintained libraries do the work: ``markdown-it-py`` (the CommonMark parser ``rich`` is built on)
finds the blocks, so headings, list items and prose paragraphs are segmented separately and code
(fenced or indented) is never cut into sentences; ``sentencex`` (Wikimedia's segmenter, ~300
languages) splits each prose block into sentences across its hard-wrapped lines, knowing
abbreviations ("e.g.", "Dr."), decimal numbers and list numbering. Both report positions in the
text they were given, so every sentence is an exact ``text[start:end]`` slice: a quote a citation
can point at character for character.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache

import sentencex
from markdown_it import MarkdownIt

LANGUAGE = "en"
TRAILING_HEADING_MARKS = " \t#"
PROSE_BLOCKS = frozenset({"paragraph_open", "heading_open"})
SENTENCE_END = frozenset(".!?…")
CLOSING_MARKS = "\"'”’)]*_"


@dataclass(frozen=True)
class Sentence:
    """One sentence of a text: ``text == source[start:end]``."""

    text: str
    start: int
    heading: bool = False

    @property
    def end(self) -> int:
        return self.start + len(self.text)

    @property
    def is_statement(self) -> bool:
        """A claim a fact can rest on: not a heading, not a question."""
        return not self.heading and not self.text.endswith("?")

    @property
    def is_complete(self) -> bool:
        """Ends the way a sentence ends (a full stop, ``!``, ``?``, maybe inside quotes or brackets),
        rather than cut off at a line end or before a list (":", a trailing "a" or "the")."""
        return self.text.rstrip(CLOSING_MARKS)[-1:] in SENTENCE_END


@lru_cache(maxsize=2)
def block_parser(markdown: bool) -> MarkdownIt:
    """CommonMark; for plain text without its indented code blocks: a plain-text file indents
    paragraphs (FAQs, READMEs, mail), and read as Markdown they would be code, never quoted."""
    parser = MarkdownIt("commonmark")
    return parser if markdown else parser.disable("code")


def prose_blocks(text: str, markdown: bool = True) -> list[tuple[int, int, bool]]:
    """``(start, end, is_heading)`` of every paragraph and heading of ``text``, code left out; a
    block starts where its content does, after list, quote and heading markers."""
    line_starts = [0] + [i + 1 for i, char in enumerate(text) if char == "\n"]
    tokens = block_parser(markdown).parse(text)
    blocks = []
    for opening, inline in itertools.pairwise(tokens):
        if opening.type in PROSE_BLOCKS and opening.map is not None and inline.content.strip():
            first, last = opening.map
            end = line_starts[last] if last < len(line_starts) else len(text)
            start = text.find(inline.content.split("\n", 1)[0], line_starts[first], end)
            blocks.append((max(start, line_starts[first]), end, opening.type == "heading_open"))
    return blocks


def trimmed(text: str, start: int, end: int, heading: bool) -> tuple[int, int]:
    """``start``/``end`` moved inwards past whitespace (and a heading's closing ``#`` marks)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and (text[end - 1].isspace() or (heading and text[end - 1] in TRAILING_HEADING_MARKS)):
        end -= 1
    return start, end


def segment(text: str, markdown: bool = True) -> list[Sentence]:
    """Every sentence of ``text``, in order, with its exact offset; ``markdown=False`` for plain text,
    whose indented paragraphs are prose."""
    found = []
    for block_start, block_end, heading in prose_blocks(text, markdown):
        block = text[block_start:block_end]
        pieces = [(0, len(block))] if heading else boundaries(block)
        for piece_start, piece_end in pieces:
            start, end = trimmed(text, block_start + piece_start, block_start + piece_end, heading)
            if end > start:
                found.append(Sentence(text[start:end], start, heading))
    return found


def boundaries(block: str) -> list[tuple[int, int]]:
    return [
        (b["start_index"], b["end_index"])
        for b in sentencex.get_sentence_boundaries(LANGUAGE, block)
        if not b["is_paragraph_break"]
    ]
