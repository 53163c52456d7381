"""Where an answer's Markdown is prose and where it is code, and the rewrites that touch prose alone.

Answers are normalised before they are written (app links to their label, LaTeX delimiters to
Markdown math) and their headings are pushed below the turn level when rendered. Both must leave
code exactly as Perplexity sent it: ``re.compile(r"\\(\\d{3}\\)")`` in a fence or in backticks is code,
not math, and ``## Step 1`` inside a fenced shell script is a comment, not a heading.

Blocks come from markdown-it-py's CommonMark parser (fenced and indented code, HTML blocks); code
spans inside prose blocks are found by CommonMark's backtick rule (a run of n backticks up to the
next run of exactly n), since the parser reports line ranges only for blocks.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from markdown_it import MarkdownIt

Span = tuple[int, int]

_PARSER = MarkdownIt("commonmark")
_CODE_BLOCKS = frozenset({"fence", "code_block"})
_RAW_BLOCKS = _CODE_BLOCKS | {"html_block"}
_BACKTICKS = re.compile(r"(?<!\\)`+")
_ATX_HEADING = re.compile(r"^(#{1,6})(?=[ \t]|$)", re.MULTILINE)
_MAX_LEVEL = 6


def _line_starts(text: str) -> list[int]:
    starts = [0]
    starts.extend(match.end() for match in re.finditer("\n", text))
    starts.append(len(text))
    return starts


def _code_spans(text: str, lo: int, hi: int) -> list[Span]:
    """Backtick code spans in ``text[lo:hi]``: an unmatched run is literal backticks."""
    runs = list(_BACKTICKS.finditer(text, lo, hi))
    spans: list[Span] = []
    index = 0
    while index < len(runs):
        opener = runs[index]
        width = len(opener.group())
        closer = next(
            (j for j in range(index + 1, len(runs)) if len(runs[j].group()) == width),
            None,
        )
        if closer is None:
            index += 1
            continue
        spans.append((opener.start(), runs[closer].end()))
        index = closer + 1
    return spans


def code_ranges(text: str, *, html: bool = True) -> list[Span]:
    """Character ranges of ``text`` that are code (and raw HTML blocks, with ``html``), in order."""
    blocks = _RAW_BLOCKS if html else _CODE_BLOCKS
    starts = _line_starts(text)
    last = len(starts) - 1
    ranges: list[Span] = []
    for token in _PARSER.parse(text):
        if token.map is None:
            continue
        lo, hi = starts[min(token.map[0], last)], starts[min(token.map[1], last)]
        if token.type in blocks:
            ranges.append((lo, hi))
        elif token.type == "inline":
            ranges.extend(_code_spans(text, lo, hi))
    return sorted(ranges)


def rewrite_prose(text: str, rewrite: Callable[[str], str], *, html: bool = True) -> str:
    """``text`` with ``rewrite`` applied to each stretch of prose between code ranges (and raw HTML
    blocks, with ``html``); code is kept byte for byte."""
    pieces: list[str] = []
    position = 0
    for lo, hi in code_ranges(text, html=html):
        if lo < position:
            continue
        pieces.extend((rewrite(text[position:lo]), text[lo:hi]))
        position = hi
    pieces.append(rewrite(text[position:]))
    return "".join(pieces)


def inside(ranges: list[Span], position: int) -> bool:
    return any(lo <= position < hi for lo, hi in ranges)


def demote_headings(text: str, levels: int) -> str:
    """ATX headings outside code pushed ``levels`` deeper (at most ``######``), so that no heading of
    an answer can pass for the thread's title or a turn's question. Lines of raw HTML blocks count
    too: the indexer reads a ``## `` line there as a heading."""
    code = code_ranges(text, html=False)

    def deeper(match: re.Match[str]) -> str:
        if inside(code, match.start()):
            return match.group(0)
        return "#" * min(len(match.group(1)) + levels, _MAX_LEVEL)

    return _ATX_HEADING.sub(deeper, text)


def close_fences(text: str) -> str:
    """``text`` with a code fence left open at its end (a cut-off answer) closed, so the fence does
    not swallow the sources and turns written after it."""
    lines = text.splitlines()
    for token in _PARSER.parse(text):
        if token.type != "fence" or token.map is None or token.map[1] < len(lines):
            continue
        last = lines[-1].strip() if token.map[1] - token.map[0] > 1 else ""
        closed = last.startswith(token.markup) and not last.strip(token.markup[0])
        if not closed:
            return f"{text.rstrip()}\n{token.markup}"
    return text
