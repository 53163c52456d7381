"""A user's source file read as text, one way for the indexer, the synthesizer and the gateway.

Offsets the indexer stores count in characters of the text it decoded, so every later reader must
decode the same bytes to the same characters, or a quote lands on the wrong ones. This module is
that one rule:

- the bytes come through the safe open (``shared.safe_files``: a regular file under the roots, no
  link followed) and never more than the indexer's cap (``HINDSIGHT_MAX_FILE_BYTES``);
- they are UTF-8, a leading byte order mark dropped (offsets count after it), else Windows-1252 as
  browsers decode it (WHATWG: the five bytes it leaves undefined are the C1 controls of Latin-1), so
  Latin-1 and Windows-1252 files are read, never refused, and no byte is lost. A statistical
  detector was measured and not used: charset-normalizer 3.4 reads short French or German Latin-1
  text as cp1250, cp1006 or hp_roman8 ("crème" as "crčme"), mangling what the user wrote.

Which suffix is which kind is said here too, so the indexer and the evidence view agree on it.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from shared.contracts import SourceKind
from shared.safe_files import read_regular_file

UTF8 = "utf-8"
WINDOWS_1252 = "windows-1252"
WHATWG_1252_ERRORS = "hindsight-whatwg-1252"
SUFFIX_KINDS = {
    ".md": SourceKind.MARKDOWN,
    ".markdown": SourceKind.MARKDOWN,
    ".txt": SourceKind.TEXT,
    ".text": SourceKind.TEXT,
    ".rst": SourceKind.TEXT,
    ".adoc": SourceKind.TEXT,
    ".asciidoc": SourceKind.TEXT,
    ".pdf": SourceKind.PDF,
    ".html": SourceKind.HTML,
    ".htm": SourceKind.HTML,
}
# Kinds whose indexed text is the file's own decoded text (after a Markdown file's front matter).
FILE_TEXT_KINDS = frozenset({SourceKind.MARKDOWN, SourceKind.TEXT})
NEWLINE = re.compile("\n")


def _c1_control(error: UnicodeError) -> tuple[str, int]:
    """The undefined Windows-1252 byte as the Latin-1 (C1 control) character of the same value."""
    if not isinstance(error, UnicodeDecodeError):
        raise error
    return error.object[error.start : error.end].decode("latin-1"), error.end


codecs.register_error(WHATWG_1252_ERRORS, _c1_control)


class DecodedText(BaseModel):
    """A file's characters and the encoding they were decoded from."""

    text: str
    encoding: str


def kind_of(path: Path) -> SourceKind | None:
    """The kind of source ``path`` is by its suffix, ``None`` for a suffix nothing reads."""
    return SUFFIX_KINDS.get(path.suffix.lower())


def decode_source(raw: bytes) -> DecodedText:
    """``raw`` as UTF-8 (a leading BOM dropped), else as Windows-1252; never fails."""
    try:
        return DecodedText(text=raw.decode("utf-8-sig"), encoding=UTF8)
    except UnicodeDecodeError:
        return DecodedText(text=raw.decode("cp1252", errors=WHATWG_1252_ERRORS), encoding=WINDOWS_1252)


def read_file_text(path: Path, max_bytes: int, roots: Sequence[Path]) -> DecodedText:
    """The text of a Markdown or text file exactly as the indexer decoded it, read through the safe
    open (under ``roots`` when any are given); ``RefusedFileError`` (a link, not a regular file,
    outside ``roots``, over ``max_bytes``)
    and ``OSError`` (gone, unreadable) pass through, and so does ``ValueError`` for a file whose
    suffix is not a text kind (its indexed text is an extraction, ``shared.extracted_text``)."""
    if kind_of(path) not in FILE_TEXT_KINDS:
        raise ValueError(f"{path.suffix or 'a file without a suffix'} is not read as text")
    return decode_source(read_regular_file(path, max_bytes, roots))


def char_offset(raw: bytes, byte_offset: int, encoding: str) -> int:
    """Where byte ``byte_offset`` of ``raw`` falls in its text decoded from ``encoding`` (what
    :func:`decode_source` said): every Windows-1252 byte is a character; UTF-8 counts the characters
    before it, a BOM not among them."""
    if encoding != UTF8:
        return byte_offset
    return len(raw[:byte_offset].decode("utf-8-sig", errors="replace"))


def line_starts(text: str) -> list[int]:
    """Where each line of ``text`` starts (the first at 0): what a 1-based line number indexes."""
    return [0, *(newline.end() for newline in NEWLINE.finditer(text))]
