"""A cited file's own text, and how offsets in the indexed text map onto it.

The indexer cuts a Markdown file's front matter off before chunking, so a chunk's offsets count from
the end of the front matter. A citation counts from the first character of the file instead (what an
editor shows), with the 1-based ``line`` and ``column`` there. The file is read as the indexer reads
it (UTF-8, a BOM dropped), and the body starts where ``shared.markdown_source`` says. Formats whose
indexed text is not the file's characters (PDF, HTML) have no file text here: their citations keep
the offsets of the extracted text.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path

from services.synthesizer.command_blocks import Block, introduced_blocks
from services.synthesizer.segmentation import Sentence, segment
from shared.contracts import SourceKind
from shared.markdown_source import split_front_matter

FILE_KINDS = frozenset({SourceKind.MARKDOWN, SourceKind.TEXT})
MAX_SOURCE_BYTES = 20_000_000


@dataclass
class SourceFile:
    """The file's text as loaded and where the indexed body starts in it."""

    text: str
    body_start: int
    line_starts: list[int] = field(repr=False)
    markdown: bool = True

    @classmethod
    def of(cls, text: str, kind: SourceKind) -> SourceFile:
        body_start = split_front_matter(text)[1] if kind is SourceKind.MARKDOWN else 0
        line_starts = [0] + [i + 1 for i, char in enumerate(text) if char == "\n"]
        markdown = kind is SourceKind.MARKDOWN
        return cls(text=text, body_start=body_start, line_starts=line_starts, markdown=markdown)

    @property
    def body(self) -> str:
        """The indexed text: what chunk and fact offsets count in."""
        return self.text[self.body_start :]

    @cached_property
    def body_sentences(self) -> list[Sentence]:
        """The body's sentences, offsets in the body (segmented once per file version)."""
        return segment(self.body, self.markdown)

    @cached_property
    def body_blocks(self) -> list[Block]:
        """The body's introduced code blocks and commands, offsets in the body."""
        return introduced_blocks(self.body, self.body_sentences, self.markdown)

    def line_and_column(self, offset: int) -> tuple[int, int]:
        """1-based line and column of the character at ``offset`` of the file."""
        line = bisect.bisect_right(self.line_starts, offset)
        return line, offset - self.line_starts[line - 1] + 1


def read_source(uri: str, kind: SourceKind) -> SourceFile | None:
    """The file behind ``uri`` when it is a text format still readable, else ``None``."""
    if kind not in FILE_KINDS:
        return None
    path = Path(uri)
    try:
        stat = path.stat()
    except OSError:
        return None
    if stat.st_size > MAX_SOURCE_BYTES:
        return None
    return cached_source(str(path), kind, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=256)
def cached_source(path: str, kind: SourceKind, mtime_ns: int, size: int) -> SourceFile | None:
    """Keyed by modification time and size, so a file edited since is read again."""
    try:
        text = Path(path).read_bytes().decode("utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return None
    return SourceFile.of(text, kind)
