"""Sentences of a source text, each with its exact span, whatever the line wrapping.

Two maintained libraries do the work: ``markdown-it-py`` (the CommonMark parser ``rich`` is built on)
finds the blocks, so headings, list items and prose paragraphs are segmented separately and code
(fenced or indented) is never cut into sentences; ``sentencex`` (Wikimedia's segmenter, ~300
languages) splits each prose block into sentences across its hard-wrapped lines, knowing
abbreviations ("e.g.", "Dr."), decimal numbers and list numbering. Both report positions in the
text they were given, so every sentence is an exact ``text[start:end]`` slice: a quote a citation
can point at character for character.

A paragraph that ends with "?" or opens with a "Q." / "Q:" marker is a question (a FAQ's question
line, which heads its answer): its sentences are not statements, even the ones that end with a full
stop ("Q. I upgraded my system ... says "trixie/sid". Should it not read "trixie"?").

A source's own reference marks written after the full stop (``houses.[1][3] Your``, as Perplexity's
2026 Markdown and Wikipedia copies place them) belong to the sentence before them, which still ends
like a sentence.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from functools import lru_cache

import sentencex
from markdown_it import MarkdownIt

from shared.source_text import line_starts

LANGUAGE = "en"
TRAILING_HEADING_MARKS = " \t#"
PROSE_BLOCKS = frozenset({"paragraph_open", "heading_open"})
CODE_BLOCKS = frozenset({"fence", "code_block"})
QUESTION_MARKERS = ("Q.", "Q:", "Question:")
SENTENCE_END = frozenset(".!?…")
CLOSING_MARKS = "\"'”’)]*_"
TRAILING_REFERENCES = re.compile(r"(?:\[\d+\])+$")


@dataclass(frozen=True)
class Sentence:
    """One sentence of a text: ``text == source[start:end]``."""

    text: str
    start: int
    heading: bool = False
    question: bool = False

    @property
    def end(self) -> int:
        return self.start + len(self.text)

    @property
    def is_statement(self) -> bool:
        """A claim a fact can rest on: not a heading, not a question nor part of one."""
        return not self.heading and not self.question and not self.text.endswith("?")

    @property
    def is_complete(self) -> bool:
        """Ends the way a sentence ends (a full stop, ``!``, ``?``, maybe inside quotes or brackets),
        rather than cut off at a line end or before a list (":", a trailing "a" or "the"); reference
        marks after it (``.[1][3]``) do not count."""
        return TRAILING_REFERENCES.sub("", self.text).rstrip(CLOSING_MARKS)[-1:] in SENTENCE_END


@lru_cache(maxsize=2)
def block_parser(markdown: bool) -> MarkdownIt:
    """CommonMark's blocks; for plain text without its indented code blocks: a plain-text file
    indents paragraphs (FAQs, READMEs, mail), and read as Markdown they would be code, never quoted.
    Inline parsing (emphasis, links, code spans) is off: only the blocks' lines and text are read,
    and it was half of the parse."""
    parser = MarkdownIt("commonmark").disable("inline")
    return parser if markdown else parser.disable("code")


ProseBlock = tuple[int, int, bool]  # start, end, is_heading
CodeBlock = tuple[int, int]  # start, end


@dataclass(frozen=True)
class BlockSpans:
    """Where a text's paragraphs and headings, and its code blocks, lie (see the functions below)."""

    prose: tuple[ProseBlock, ...]
    code: tuple[CodeBlock, ...]


@lru_cache(maxsize=4)
def block_spans(text: str, markdown: bool) -> BlockSpans:
    """One block parse of ``text`` for both its prose and its code: a cited file's sentences and
    its commands read both, and the parse is most of segmenting it. Kept for the last few texts
    (spans only, not the parser's tokens, which a large file makes large)."""
    starts = line_starts(text)
    tokens = block_parser(markdown).parse(text)
    prose = []
    for opening, inline in itertools.pairwise(tokens):
        if opening.type in PROSE_BLOCKS and opening.map is not None and inline.content.strip():
            first, last = opening.map
            end = starts[last] if last < len(starts) else len(text)
            start = text.find(inline.content.split("\n", 1)[0], starts[first], end)
            prose.append((max(start, starts[first]), end, opening.type == "heading_open"))
    code = []
    for token in tokens:
        if token.type in CODE_BLOCKS and token.map is not None and token.content.strip():
            first, last = token.map
            end = starts[last] if last < len(starts) else len(text)
            start = starts[first]
            code.append((start, start + len(text[start:end].rstrip())))
    return BlockSpans(tuple(prose), tuple(code))


def prose_blocks(text: str, markdown: bool = True) -> tuple[ProseBlock, ...]:
    """``(start, end, is_heading)`` of every paragraph and heading of ``text``, code left out; a
    block starts where its content does, after list, quote and heading markers."""
    return block_spans(text, markdown).prose


def code_blocks(text: str, markdown: bool = True) -> tuple[CodeBlock, ...]:
    """``(start, end)`` of every code block of ``text`` (fenced, or indented in Markdown): whole
    lines, from the first line's start (its indentation, a fence's opening line) to the last
    character of its last line."""
    return block_spans(text, markdown).code


def is_question(block: str) -> bool:
    """A FAQ's question paragraph: it ends with "?" or opens with a "Q." / "Q:" marker."""
    stripped = block.strip()
    return stripped.rstrip(CLOSING_MARKS).endswith("?") or stripped.startswith(QUESTION_MARKERS)


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
        question = not heading and is_question(block)
        for piece_start, piece_end in pieces:
            start, end = trimmed(text, block_start + piece_start, block_start + piece_end, heading)
            if end > start:
                found.append(Sentence(text[start:end], start, heading, question))
    return found


def boundaries(block: str) -> list[tuple[int, int]]:
    """Sentence spans of a prose block; a break not followed by whitespace is no break: "to the
    ./configure invocation" and "use `./jq`" go on past the full stop (sentencex leaves the space
    after a break at the end of one span, or after reference marks at the start of the next)."""
    spans: list[tuple[int, int]] = []
    for found in sentencex.get_sentence_boundaries(LANGUAGE, block):
        if found["is_paragraph_break"]:
            continue
        start, end = found["start_index"], found["end_index"]
        if spans and spans[-1][1] == start > 0 and not (block[start - 1].isspace() or block[start].isspace()):
            start = spans.pop()[0]
        spans.append((start, end))
    return spans
