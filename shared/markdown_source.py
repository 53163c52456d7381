"""How a Markdown source file splits into front matter and body, and a heading's plain text.

The indexer chunks the body and the retriever's exact-match leg maps file offsets back to it, so
both must agree on where the body starts: this module is that one rule. It also says where code
fences are, so the indexer (sections) and the evidence view (a passage's turn) read the same
headings: a ``## `` line inside a fence is code, not a heading. A title taken from a heading is its
text without the markup (``# [libcbor](https://…)`` is titled "libcbor").
"""

from __future__ import annotations

import re

MARKDOWN_SUFFIXES = frozenset({".md", ".markdown"})
FENCE = re.compile(r"^[ \t]{0,3}(```|~~~)", re.MULTILINE)
FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?\r?\n)---[ \t]*\r?\n", re.DOTALL)


def split_front_matter(raw: str) -> tuple[str | None, int]:
    """The front matter's YAML text (``None`` when there is none) and where the body starts."""
    match = FRONT_MATTER.match(raw)
    return (match.group(1), match.end()) if match else (None, 0)


def fenced_ranges(text: str) -> list[tuple[int, int]]:
    """Character ranges of code fences, from the opening marker to the end of the closing line."""
    marks = [m.start() for m in FENCE.finditer(text)]
    ranges = []
    for opening, closing in zip(marks[::2], marks[1::2], strict=False):
        line_end = text.find("\n", closing)
        ranges.append((opening, len(text) if line_end < 0 else line_end))
    if len(marks) % 2:
        ranges.append((marks[-1], len(text)))
    return ranges


def plain_inline(markdown: str) -> str:
    """The text of one line of Markdown as a reader sees it: links, emphasis and code marks dropped,
    images as their alt text (markdown-it-py, CommonMark's parser)."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").parseInline(markdown)
    parts = [
        child.content
        for token in tokens
        for child in token.children or []
        if child.type in {"text", "code_inline", "image"} or child.type.endswith("break")
    ]
    return " ".join("".join(p if p else " " for p in parts).split()) or markdown.strip()
