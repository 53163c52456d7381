"""Reduce: turn the mapped facts into a cited answer, then check every cited sentence."""

from __future__ import annotations

import re

from services.synthesizer.citations import cite
from services.synthesizer.selection import best_per_source, relevance_gate
from services.synthesizer.text_support import support
from shared.contracts import Answer, Candidate, Citation, MapResult, QuestionState, SourcePreview, Verdict

MAX_CITED_FACTS = 6
SUPPORT_THRESHOLD = 0.5
PREVIEW_CHARS = 160
MARKER = re.compile(r"\s*\[(\d+)\]")


def sources_explored(candidates: list[Candidate]) -> list[SourcePreview]:
    seen: dict[str, SourcePreview] = {}
    for candidate in candidates:
        chunk = candidate.chunk
        if chunk.document_id not in seen:
            preview = " ".join(chunk.text.split())[:PREVIEW_CHARS]
            seen[chunk.document_id] = SourcePreview(
                title=chunk.title, source_uri=chunk.source_uri, preview=preview
            )
    return list(seen.values())


def verify_lexically(markdown: str, citations: list[Citation]) -> list[Verdict]:
    """Each line with markers is checked against the quotes it cites."""
    quotes = {c.number: c.quote for c in citations}
    verdicts = []
    for line in markdown.splitlines():
        numbers = [int(n) for n in MARKER.findall(line)]
        if not numbers:
            continue
        sentence = MARKER.sub("", line).strip()
        score = max(support(sentence, quotes.get(n, "")) for n in numbers)
        verdicts.append(
            Verdict(
                sentence=sentence,
                citations=numbers,
                supported=score >= SUPPORT_THRESHOLD,
                score=round(score, 3),
                method="lexical",
            )
        )
    return verdicts


def extractive_answer(state: QuestionState, results: list[MapResult]) -> Answer:
    """The best-supported sentences, one per source, each followed by its citation marker."""
    by_chunk = {c.chunk.id: c for c in state.candidates}
    facts = [fact for result in results for fact in result.facts if fact.chunk_id in by_chunk]
    document_of = {chunk_id: c.chunk.document_id for chunk_id, c in by_chunk.items()}
    chosen = best_per_source(relevance_gate(facts), document_of)[:MAX_CITED_FACTS]
    citations = [cite(n, fact, by_chunk[fact.chunk_id]) for n, fact in enumerate(chosen, start=1)]
    if citations:
        markdown = "\n".join(f"- {c.quote} [{c.number}]" for c in citations)
    else:
        markdown = "No passage in the indexed sources answers this question."
    return Answer(
        question_id=state.question_id,
        question=state.question,
        markdown=markdown,
        citations=citations,
        verdicts=verify_lexically(markdown, citations),
        sources_explored=sources_explored(state.candidates),
        mode="extractive",
    )
