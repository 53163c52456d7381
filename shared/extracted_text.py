"""The text the indexer extracts from a PDF or an HTML file, in one place for the indexer (which
indexes it) and the gateway (which shows a cited passage in it): both must read the same characters,
because a PDF's or an HTML file's citation counts its offsets in this text, not in the file.

A PDF's text is its pages' text (pypdf, in the reader process of ``shared.pdf_reader``) joined by
blank lines, with the offset where each page starts; an HTML file's is its main content as Markdown
(trafilatura: headings and code fences kept, navigation and footers dropped), else all of its text.
"""

from __future__ import annotations

import bisect

from pydantic import BaseModel

from shared.pdf_reader import READER

PAGE_SEPARATOR = "\n\n"


class PdfText(BaseModel):
    """What the PDF reader found: the pages' text and the title, or why the file is skipped or failed."""

    pages: list[str] = []
    title: str | None = None
    skipped: str | None = None
    failed: str | None = None


def read_pdf(raw: bytes, max_chars: int, time_limit_s: float) -> PdfText:
    """The PDF's pages as the reader process extracts them (``shared.pdf_reader``: killed past
    ``time_limit_s``, when it raises ``ReadTooLongError``; ``ReaderDiedError`` when it died)."""
    return PdfText.model_validate_json(READER.read(raw, max_chars, time_limit_s))


def joined_pages(pages: list[str]) -> tuple[str, list[int]]:
    """The pages' text joined by :data:`PAGE_SEPARATOR`, and where each page starts in it."""
    starts, offset = [], 0
    for page in pages:
        starts.append(offset)
        offset += len(page) + len(PAGE_SEPARATOR)
    return PAGE_SEPARATOR.join(pages), starts


def page_at(page_starts: list[int], offset: int) -> int | None:
    """The 1-based page holding character ``offset``, or ``None`` for unpaged text."""
    return bisect.bisect_right(page_starts, offset) if page_starts else None


def page_ranges(text: str, page_starts: list[int]) -> list[tuple[int, int]]:
    """Character ranges of the pages (without the separators between them); none when unpaged."""
    ends = [start - len(PAGE_SEPARATOR) for start in page_starts[1:]] + [len(text)]
    return list(zip(page_starts, ends, strict=True)) if page_starts else []


def html_text(raw: str) -> str:
    """The page's main content as Markdown, else all its text ("" when it has none)."""
    import trafilatura

    text = trafilatura.extract(raw, output_format="markdown", favor_recall=True, include_comments=False)
    return text or trafilatura.html2txt(raw) or ""
