"""How a Markdown source file splits into front matter and body, and a heading's plain text.

The indexer chunks the body and the retriever's exact-match leg maps file offsets back to it, so
both must agree on where the body starts: this module is that one rule. It also says where code
fences are, so the indexer (sections) and the evidence view (a passage's turn) read the same
headings: a ``## `` line inside a fence is code, not a heading. Fences follow CommonMark's rule, as
the exporter's parser (markdown-it) does: a fence closes only at a line of its own character, at
least as long as its opening, with nothing after it, so a ``` line inside a ```` or ~~~ fence (an
answer that writes a README) is content. A title taken from a heading is its text without the markup
(``# [libcbor](https://…)`` is titled "libcbor").
"""

from __future__ import annotations

import re

MARKDOWN_SUFFIXES = frozenset({".md", ".markdown"})
FENCE_LINE = re.compile(r"^ {0,3}(?P<run>`{3,}|~{3,})(?P<rest>.*)$", re.MULTILINE)
FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?\r?\n)---[ \t]*\r?\n", re.DOTALL)


def split_front_matter(raw: str) -> tuple[str | None, int]:
    """The front matter's YAML text (``None`` when there is none) and where the body starts."""
    match = FRONT_MATTER.match(raw)
    return (match.group(1), match.end()) if match else (None, 0)


def fenced_ranges(text: str) -> list[tuple[int, int]]:
    """Character ranges of code fences, from the opening line's start to the end of the closing line
    (or of ``text`` for a fence never closed). A backtick line whose info string holds a backtick
    opens nothing (it is a code span); a closing line is the opening's character, at least as many,
    then only spaces."""
    ranges = []
    opening: tuple[int, str] | None = None
    for line in FENCE_LINE.finditer(text):
        run, rest = line.group("run"), line.group("rest")
        if opening is None:
            if not (run[0] == "`" and "`" in rest):
                opening = (line.start(), run)
        elif run[0] == opening[1][0] and len(run) >= len(opening[1]) and not rest.strip():
            ranges.append((opening[0], line.end()))
            opening = None
    if opening is not None:
        ranges.append((opening[0], len(text)))
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
