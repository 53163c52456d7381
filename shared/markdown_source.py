"""How a Markdown source file splits into front matter and body.

The indexer chunks the body and the retriever's exact-match leg maps file offsets back to it, so
both must agree on where the body starts: this module is that one rule.
"""

from __future__ import annotations

import re

MARKDOWN_SUFFIXES = frozenset({".md", ".markdown"})
FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?\r?\n)---[ \t]*\r?\n", re.DOTALL)


def split_front_matter(raw: str) -> tuple[str | None, int]:
    """The front matter's YAML text (``None`` when there is none) and where the body starts."""
    match = FRONT_MATTER.match(raw)
    return (match.group(1), match.end()) if match else (None, 0)
