"""Resolve facts to numbered citations in the cited file's own coordinates, checked against the file.

A fact's quote offset counts in the indexed text; the citation's counts in the file as loaded (front
matter included: the chunk's stored ``body_start`` shifts it), with the line and column there, and
``verified`` says the file holds exactly the quote at that span (found in the file, nothing about
whether it answers: the passage's ``rank`` and cross-encoder ``rerank_score``, carried on the
citation, describe that). A file that cannot be read
as text (PDF, HTML, gone) keeps the indexed offsets and is checked against the passage the fact came
from.
"""

from __future__ import annotations

from services.synthesizer.source_files import read_source
from shared.contracts import Candidate, Citation, Fact


def quote_found(candidate: Candidate, quote: str, quote_start: int) -> bool:
    """The quote sits exactly at its claimed offset in the passage the fact came from."""
    offset = quote_start - candidate.text_start
    return offset >= 0 and candidate.text[offset : offset + len(quote)] == quote


def cite(number: int, fact: Fact, candidate: Candidate, rank: int | None = None) -> Citation:
    chunk = candidate.chunk
    citation = Citation(
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
        source_url=chunk.source_url,
        turn_question=chunk.turn_question,
        body_start=chunk.body_start,
        rank=rank,
        rerank_score=candidate.rerank_score,
    )
    source = read_source(chunk)
    if source is None:
        return citation
    start = source.body_start + fact.quote_start
    end = start + len(fact.quote)
    line, column = source.line_and_column(start)
    return citation.model_copy(
        update={
            "char_start": start,
            "char_end": end,
            "line": line,
            "column": column,
            "verified": source.text[start:end] == fact.quote,
        }
    )
