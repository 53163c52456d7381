"""A cited file's own text, and how offsets in the indexed text map onto it.

A chunk's offsets count in the indexed text, which for a Markdown file starts after its front
matter, at the ``body_start`` the indexer stored with the chunk. A citation counts from the first
character of the file instead (what an editor shows), with the 1-based ``line`` and ``column`` there.
The file is read by ``shared.source_text``, the one reader every service shares: the safe open (no
link followed, a regular file, under the roots of ``shared.index_jobs.allowed_roots`` whenever any
are configured: the path comes from the store, not from a request), the indexer's size cap, its
decoding (UTF-8 without its BOM, else Windows-1252). Formats whose indexed text is not the file's
characters (PDF, HTML) have no file text here: their citations keep the offsets of the extracted
text.
"""

from __future__ import annotations

import bisect
import os
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path

from services.synthesizer.command_blocks import Block, introduced_blocks
from services.synthesizer.segmentation import Sentence, segment
from shared.contracts import Chunk, SourceKind
from shared.index_jobs import allowed_roots
from shared.settings import get_settings
from shared.source_text import FILE_TEXT_KINDS, line_starts, read_file_text


@dataclass
class SourceFile:
    """The file's text as loaded and where the indexed body starts in it."""

    text: str
    body_start: int
    line_starts: list[int] = field(repr=False)
    markdown: bool = True

    @classmethod
    def of(cls, text: str, kind: SourceKind, body_start: int) -> SourceFile:
        markdown = kind is SourceKind.MARKDOWN
        return cls(text=text, body_start=body_start, line_starts=line_starts(text), markdown=markdown)

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


def read_source(chunk: Chunk) -> SourceFile | None:
    """The file ``chunk`` was cut from when it is a text format the safe open still admits, else
    ``None``."""
    if chunk.kind not in FILE_TEXT_KINDS:
        return None
    try:
        found = os.lstat(chunk.source_uri)  # not followed: a link in the file's place is a new key
    except OSError:
        return None
    settings = get_settings()
    roots = tuple(allowed_roots(settings.indexing, settings.roots_file))
    version = (found.st_ino, found.st_mtime_ns, found.st_size)
    return cached_source(chunk.source_uri, chunk.kind, chunk.body_start, version, roots)


@lru_cache(maxsize=256)
def cached_source(
    uri: str, kind: SourceKind, body_start: int, version: tuple[int, int, int], roots: tuple[Path, ...]
) -> SourceFile | None:
    """Keyed by the file's inode, modification time and size, so a file edited since is read again."""
    try:
        decoded = read_file_text(Path(uri), get_settings().indexing.max_file_bytes, roots)
    except (OSError, ValueError):  # gone, unreadable, refused by the safe open (RefusedFileError)
        return None
    return SourceFile.of(decoded.text, kind, body_start)
