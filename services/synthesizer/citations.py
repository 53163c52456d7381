"""Resolve facts to numbered citations whose spans are checked verbatim against the chunk text."""

from __future__ import annotations

from shared.contracts import Candidate, Citation, Fact


def quote_found(candidate: Candidate, quote: str, quote_start: int) -> bool:
    """The quote sits exactly at its claimed offset in the passage the fact came from."""
    offset = quote_start - candidate.text_start
    return offset >= 0 and candidate.text[offset : offset + len(quote)] == quote


def cite(number: int, fact: Fact, candidate: Candidate) -> Citation:
    chunk = candidate.chunk
    return Citation(
        number=number,
        document_id=chunk.document_id,
        chunk_id=chunk.id,
        title=chunk.title,
        source_uri=chunk.source_uri,
        page=chunk.page,
        char_start=fact.quote_start,
        char_end=fact.quote_start + len(fact.quote),
        quote=fact.quote,
        verified=quote_found(candidate, fact.quote, fact.quote_start),
    )
