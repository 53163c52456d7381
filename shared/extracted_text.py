"""The text the indexer extracts from a PDF or an HTML file, in one place for the indexer (which
indexes it) and the gateway (which shows a cited passage in it): both must read the same characters,
because a PDF's or an HTML file's citation counts its offsets in this text, not in the file.

A PDF's text is its pages' text (pypdf, in the reader process of ``shared.pdf_reader``) without
their running heads and feet (a line at a page's top or bottom that recurs, page numbers aside, on
most pages: "Chapter 4: Function reference 22"), joined by blank lines, with the offset where each
page starts; an HTML file's is its main content as Markdown (trafilatura: headings and code fences
kept, navigation and footers dropped), else all of its text.

:data:`EXTRACTION_VERSION` names these rules: it is part of a PDF's or HTML file's content digest,
so a library indexed under other rules re-extracts those files on its next scan, and citations,
evidence and the indexed text count in the same characters.
"""

from __future__ import annotations

import bisect
import re

from pydantic import BaseModel

from shared.pdf_reader import READER

PAGE_SEPARATOR = "\n\n"
EXTRACTION_VERSION = "2"
# How many lines at each end of a page may be a running head or foot, and on what share of the
# pages (at least three) a line without the page's number must recur there to be one.
RUNNING_LINES_PER_END = 2
RUNNING_SHARE = 0.5
RUNNING_MIN_PAGES = 3
DIGITS = re.compile(r"\d+")


class PdfText(BaseModel):
    """What the PDF reader found: the pages' text and the title, or why the file is skipped or failed."""

    pages: list[str] = []
    title: str | None = None
    skipped: str | None = None
    failed: str | None = None


def read_pdf(raw: bytes, max_chars: int, time_limit_s: float) -> PdfText:
    """The PDF's pages as the reader process extracts them (``shared.pdf_reader``: killed past
    ``time_limit_s``, when it raises ``ReadTooLongError``; ``ReaderDiedError`` when it died),
    without their running heads and feet."""
    extracted = PdfText.model_validate_json(READER.read(raw, max_chars, time_limit_s))
    extracted.pages = without_running_lines(extracted.pages)
    return extracted


def _end_lines(page: str) -> list[tuple[int, str, str]]:
    """``(index, place, line)`` of the page's first and last :data:`RUNNING_LINES_PER_END`
    non-blank lines, ``place`` naming the end and the rank from it (``top:0`` is the first line)."""
    lines = page.splitlines()
    filled = [i for i, line in enumerate(lines) if line.strip()]
    ends = (("top", filled[:RUNNING_LINES_PER_END]), ("bottom", filled[::-1][:RUNNING_LINES_PER_END]))
    return [
        (index, f"{end}:{rank}", lines[index].strip())
        for end, indices in ends
        for rank, index in enumerate(indices)
    ]


def _counts_pages(occurrences: list[tuple[int, str]]) -> bool:
    """Whether one of the line's numbers is its page's number, give or take one fixed offset (the
    front matter's pages), on every page it is on: a running head such as "Chapter 4 … 22"."""
    numbers = [(page, [int(n) for n in DIGITS.findall(line)]) for page, line in occurrences]
    places = min(len(found) for _, found in numbers)
    return any(len({found[place] - page for page, found in numbers}) == 1 for place in range(places))


def _running_keys(pages: list[str]) -> set[str]:
    """The keys of the running lines: ``place|line`` of a line on :data:`RUNNING_SHARE` of the pages
    (at least :data:`RUNNING_MIN_PAGES`) at that place, and ``place|masked line`` of a line, its
    numbers masked, on two pages or more at that place, one of its numbers each page's number."""
    exact: dict[str, int] = {}
    masked: dict[str, list[tuple[int, str]]] = {}
    for number, page in enumerate(pages):
        for _, place, line in _end_lines(page):
            exact[f"{place}|{line}"] = exact.get(f"{place}|{line}", 0) + 1
            masked.setdefault(f"{place}|{DIGITS.sub('#', line)}", []).append((number, line))
    needed = max(RUNNING_MIN_PAGES, RUNNING_SHARE * len(pages))
    return {key for key, count in exact.items() if count >= needed} | {
        key for key, seen in masked.items() if len(seen) >= 2 and _counts_pages(seen)
    }


def without_running_lines(pages: list[str]) -> list[str]:
    """The pages without their running heads and feet (:func:`_running_keys`): only lines at a
    page's ends are candidates, and text elsewhere on a page is never touched."""
    if len(pages) < RUNNING_MIN_PAGES:
        return pages
    running = _running_keys(pages)
    return [_without(page, running) for page in pages] if running else pages


def _without(page: str, running: set[str]) -> str:
    dropped = {
        index
        for index, place, line in _end_lines(page)
        if f"{place}|{line}" in running or f"{place}|{DIGITS.sub('#', line)}" in running
    }
    kept = "\n".join(line for i, line in enumerate(page.splitlines()) if i not in dropped).strip("\n")
    return kept if kept.strip() else page  # a page is never emptied: those lines were its text


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
