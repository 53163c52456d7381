"""The passage around a citation, read from its source file, for the web page's evidence view.

The path is never taken from the request: it is the ``source_uri`` of a citation in an answer the
pipeline stored, and it must be a text format, read through the safe open (``shared.safe_files``:
no symlink, a regular file under the roots, size-capped). A citation's span counts in the file's own
text (front matter included), so the span highlighted is ``text[char_start:char_end]`` when the file
still holds the quote there; after an edit that moved it, the occurrence nearest the cited offset.
When the quote cannot be found (PDF, file gone or changed, or refused by the safe open) the quote
alone is returned, marked as such. A Markdown file's evidence gets its thread context
(``thread_source``) from the same read of the file.
"""

from __future__ import annotations

from pathlib import Path

from services.gateway.schemas import Evidence
from services.gateway.thread_source import with_source_context
from shared.contracts import Citation, SearchResponse, SourceKind
from shared.markdown_source import MARKDOWN_SUFFIXES, split_front_matter
from shared.safe_files import RefusedFileError, read_regular_file

CONTEXT_CHARS = 400
# Larger files are not read for evidence (the quote alone is returned).
EVIDENCE_MAX_BYTES = 20 * 1024 * 1024
TEXT_SUFFIXES = frozenset({".md", ".markdown", ".txt"})


def readable_source(uri: str, roots: list[Path]) -> Path | None:
    path = Path(uri)
    if not roots or not path.is_absolute() or path.suffix.lower() not in TEXT_SUFFIXES:
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
    )
    text = file_text(citation.source_uri, roots)
    if text is None:
        return found
    start = nearest_occurrence(text, citation.quote, citation.char_start) if citation.quote else None
    if start is not None:
        end = start + len(citation.quote)
        found.line = text.count("\n", 0, start) + 1
        found.before = text[max(0, start - CONTEXT_CHARS) : start]
        found.after = text[end : end + CONTEXT_CHARS]
        found.located = True
    if Path(citation.source_uri).suffix.lower() in MARKDOWN_SUFFIXES:
        with_source_context(found, citation, text)
    return found


def file_text(uri: str, roots: list[Path]) -> str | None:
    """A Markdown or text source's text through the safe open; ``None`` when it cannot be read."""
    path = readable_source(uri, roots)
    if path is None:
        return None
    try:
        return read_regular_file(path, EVIDENCE_MAX_BYTES, roots).decode("utf-8")
    except (OSError, UnicodeDecodeError, RefusedFileError):
        return None


def with_lines(response: SearchResponse, roots: list[Path]) -> SearchResponse:
    """Each passage of a Markdown or text file with the line of the file it starts on (a Markdown
    file's offsets count from the end of its front matter); others keep ``None``."""
    texts: dict[str, str | None] = {}
    for candidate in response.candidates:
        uri = candidate.chunk.source_uri
        if uri not in texts:
            texts[uri] = file_text(uri, roots)
        text = texts[uri]
        if text is None:
            continue
        body_start = split_front_matter(text)[1] if candidate.chunk.kind is SourceKind.MARKDOWN else 0
        candidate.line = text.count("\n", 0, body_start + candidate.text_start) + 1
    return response
