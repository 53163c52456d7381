"""The text the indexer extracts from a PDF or an HTML file, in one place for the indexer (which
indexes it) and the gateway (which shows a cited passage in it): both must read the same characters,
because a PDF's or an HTML file's citation counts its offsets in this text, not in the file.

A PDF's text is its pages' text (pypdf) joined by blank lines, with the offset where each page
starts; an HTML file's is its main content as Markdown (trafilatura: headings and code fences kept,
navigation and footers dropped), else all of its text.
"""

from __future__ import annotations

import bisect
import io
from dataclasses import dataclass, field

PAGE_SEPARATOR = "\n\n"


class TooMuchTextError(ValueError):
    """The extracted text passed the limit it was given (a small PDF can expand to millions)."""

    def __init__(self, max_chars: int) -> None:
        super().__init__(f"extracts to over {max_chars:,} characters of text")
        self.max_chars = max_chars


@dataclass(frozen=True)
class PdfText:
    """A PDF's pages' text joined by :data:`PAGE_SEPARATOR`, where each page starts, and its title."""

    text: str
    page_starts: list[int] = field(default_factory=list)
    title: str | None = None


def page_at(page_starts: list[int], offset: int) -> int | None:
    """The 1-based page holding character ``offset``, or ``None`` for unpaged text."""
    return bisect.bisect_right(page_starts, offset) if page_starts else None


def page_ranges(text: str, page_starts: list[int]) -> list[tuple[int, int]]:
    """Character ranges of the pages (without the separators between them); none when unpaged."""
    ends = [start - len(PAGE_SEPARATOR) for start in page_starts[1:]] + [len(text)]
    return list(zip(page_starts, ends, strict=True)) if page_starts else []


def pdf_text(raw: bytes, max_chars: int) -> PdfText:
    """The PDF's text page by page. Raises :class:`TooMuchTextError` as soon as the text passes
    ``max_chars``, pypdf's ``FileNotDecryptedError`` for a password, and whatever pypdf raises on a
    damaged file (callers treat any other exception as "corrupt")."""
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(raw))
    if reader.is_encrypted:
        reader.decrypt("")
    pages: list[str] = []
    for pdf_page in reader.pages:
        pages.append(pdf_page.extract_text() or "")
        if sum(map(len, pages)) > max_chars:
            raise TooMuchTextError(max_chars)
    starts, offset = [], 0
    for page in pages:
        starts.append(offset)
        offset += len(page) + len(PAGE_SEPARATOR)
    info = reader.metadata
    title = str(info.title) if info is not None and info.title else None
    return PdfText(PAGE_SEPARATOR.join(pages), starts, title)


def html_text(raw: str) -> str:
    """The page's main content as Markdown, else all its text ("" when it has none)."""
    import trafilatura

    text = trafilatura.extract(raw, output_format="markdown", favor_recall=True, include_comments=False)
    return text or trafilatura.html2txt(raw) or ""
