"""The passage around a citation, read from its source file, for the web page's evidence view.

The path is never taken from the request: it is the ``source_uri`` of a citation in an answer the
pipeline stored, read through the safe open (``shared.safe_files``: no symlink, a regular file under
the roots, the indexer's size cap). A Markdown or text citation's span counts in the file's own text
(front matter included), decoded as the indexer decoded it (``shared.source_text``); a PDF's or an
HTML file's counts in the text the indexer extracted, which ``shared.extracted_text`` extracts here
the same way. The span highlighted is ``text[char_start:char_end]`` when the text still holds the
quote there; after an edit that moved it, the occurrence nearest the cited offset. A PDF's passage
is its whole page, with the page number; a text file's has its line, and its context never reaches
into a Markdown file's front matter (before the citation's ``body_start``). When the quote cannot be
found (file gone or changed, or refused by the safe open) the quote alone is returned, marked as
such. A thread's address and a turn's question come with the citation (the indexer stored them with
the chunk): nothing here parses the file's front matter or headings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from services.gateway.schemas import Evidence
from shared.contracts import Citation, SearchResponse, SourceKind
from shared.extracted_text import html_text, joined_pages, page_at, page_ranges, read_pdf
from shared.safe_files import RefusedFileError, read_regular_file
from shared.settings import get_settings
from shared.source_text import FILE_TEXT_KINDS, DecodedText, decode_source, kind_of, read_file_text

CONTEXT_CHARS = 400
EXTRACTED_KINDS = frozenset({SourceKind.PDF, SourceKind.HTML})


@dataclass(frozen=True)
class SourceText:
    """The text a citation counts in: the file's own (``extracted`` false) or the indexer's
    extraction of a PDF (with where each page starts) or an HTML file; ``encoding`` is what a text
    file's or an HTML file's bytes were decoded from (``None`` for a PDF)."""

    text: str
    extracted: bool = False
    page_starts: list[int] = field(default_factory=list)
    encoding: str | None = None


def readable_source(uri: str, roots: list[Path], kinds: frozenset[SourceKind]) -> Path | None:
    """The absolute path ``uri`` when it is a source of one of ``kinds`` and there are roots."""
    path = Path(uri)
    if not roots or not path.is_absolute() or kind_of(path) not in kinds:
        return None
    return path


def nearest_occurrence(text: str, quote: str, near: int) -> int | None:
    if text[near : near + len(quote)] == quote:
        return near
    best: int | None = None
    start = text.find(quote)
    while start != -1:
        if best is None or abs(start - near) < abs(best - near):
            best = start
        start = text.find(quote, start + 1)
    return best


def evidence_for(citation: Citation, roots: list[Path]) -> Evidence:
    found = Evidence(
        number=citation.number,
        title=citation.title,
        source_uri=citation.source_uri,
        page=citation.page,
        quote=citation.quote,
        verified=citation.verified,
        line=citation.line,
        rank=citation.rank,
        rerank_score=citation.rerank_score,
        thread_url=citation.source_url,
        turn_question=citation.turn_question,
    )
    source = source_text(citation.source_uri, roots)
    if source is None:
        return found
    found.encoding = source.encoding
    start = nearest_occurrence(source.text, citation.quote, citation.char_start) if citation.quote else None
    if start is not None:
        with_passage(found, source, start, body_start=citation.body_start)
    return found


def with_passage(found: Evidence, source: SourceText, start: int, body_start: int = 0) -> None:
    """The text around the quote at ``start``: a PDF's whole page and its number, else some context
    either side (none before ``body_start`` when the quote is past it) and, in a file's own text,
    the line."""
    text, end = source.text, start + len(found.quote)
    context_start, context_end = max(min(body_start, start), start - CONTEXT_CHARS), end + CONTEXT_CHARS
    if source.page_starts:
        found.page = page_at(source.page_starts, start)
        context_start, context_end = page_ranges(text, source.page_starts)[(found.page or 1) - 1]
    elif not source.extracted:
        found.line = text.count("\n", 0, start) + 1
    found.before, found.after = text[context_start:start], text[end:context_end]
    found.located, found.extracted = True, source.extracted


def source_text(uri: str, roots: list[Path]) -> SourceText | None:
    """The text a citation of ``uri`` counts in, through the safe open; ``None`` when it cannot be
    read (refused, gone, a damaged PDF)."""
    if (decoded := file_text(uri, roots)) is not None:
        return SourceText(decoded.text, encoding=decoded.encoding)
    path = readable_source(uri, roots, EXTRACTED_KINDS)
    if path is None:
        return None
    try:
        raw = read_regular_file(path, get_settings().indexing.max_file_bytes, roots)
        if kind_of(path) is SourceKind.PDF:
            return extracted_pdf(raw)
        decoded = decode_source(raw)
        return SourceText(html_text(decoded.text), extracted=True, encoding=decoded.encoding)
    except Exception:  # refused, gone, or the PDF reader stopped (too slow, out of memory)
        return None


# The media types the page's viewers take a cited file in: the PDF viewer, and the sandboxed frame
# that shows an HTML page as published.
VIEWED_KINDS = {SourceKind.PDF: "application/pdf", SourceKind.HTML: "text/html"}


def cited_file_bytes(citation: Citation, roots: list[Path]) -> tuple[bytes, str] | None:
    """The cited PDF's or HTML page's bytes and media type, through the safe open; ``None`` for
    another kind of source or one that cannot be read now (refused, gone, over the size cap)."""
    path = readable_source(citation.source_uri, roots, frozenset(VIEWED_KINDS))
    kind = kind_of(Path(citation.source_uri))
    if path is None or kind is None:
        return None
    try:
        return read_regular_file(path, get_settings().indexing.max_file_bytes, roots), VIEWED_KINDS[kind]
    except (OSError, RefusedFileError):
        return None


@lru_cache(maxsize=4)
def extracted_pdf(raw: bytes) -> SourceText | None:
    """A PDF's text as the indexer extracts it, by the same reader process and limits (kept for
    the next citation of the same file); ``None`` when the reader refuses or fails on it."""
    settings = get_settings()
    outcome = read_pdf(raw, settings.indexing.max_document_chars, settings.indexing.pdf_time_limit_s)
    if not outcome.pages:
        return None
    text, starts = joined_pages(outcome.pages)
    return SourceText(text, extracted=True, page_starts=starts)


def file_text(uri: str, roots: list[Path]) -> DecodedText | None:
    """A Markdown or text source's text as the indexer decoded it, with its encoding
    (``shared.source_text``); ``None`` when it cannot be read."""
    path = readable_source(uri, roots, FILE_TEXT_KINDS)
    if path is None:
        return None
    try:
        return read_file_text(path, get_settings().indexing.max_file_bytes, roots)
    except (OSError, ValueError):  # gone, unreadable, refused by the safe open
        return None


def with_lines(response: SearchResponse, roots: list[Path]) -> SearchResponse:
    """Each passage of a Markdown or text file with the line of the file it starts on (its offsets
    count from the chunk's ``body_start``, the end of a Markdown file's front matter); others keep
    ``None``."""
    texts: dict[str, DecodedText | None] = {}
    for candidate in response.candidates:
        uri = candidate.chunk.source_uri
        if uri not in texts:
            texts[uri] = file_text(uri, roots)
        decoded = texts[uri]
        if decoded is None:
            continue
        candidate.line = decoded.text.count("\n", 0, candidate.chunk.body_start + candidate.text_start) + 1
    return response
