"""Reduce: mapped facts → select → fit the budget → narrate → verify → cite.

Without an LLM the selection is ``selection``'s (the best sentence, one per unanswered part of
the question, no near-duplicates); with one, facts loosely relevant to the question, the best per
document. When no sentence survives, or the cross-encoder's best logit is under its calibrated
answerability cut (``RerankOutcome.answerable``), the answer says so and names the closest sources
instead.

Citations are numbered in order of first appearance among the sentences that survived verification,
so every ``[n]`` in the answer resolves to exactly one citation and no citation goes unused.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.synthesizer.citations import cite
from services.synthesizer.narrator import Claim, narrate_extractively, narrate_with_llm, render
from services.synthesizer.selection import best_per_source, compress, relevance_gate, select_answer_facts
from services.synthesizer.verify import CheckedClaim, Verifier
from shared.contracts import (
    Answer,
    Candidate,
    Citation,
    Fact,
    MapResult,
    Relevance,
    RerankedQuestion,
    RerankOutcome,
    SourcePreview,
    Verdict,
)
from shared.interfaces import LLM, LLMError
from shared.settings import SynthesisSettings
from shared.stage_events import ReduceData

PREVIEW_CHARS = 160
NO_ANSWER = "No passage in the indexed sources answers this question."
CLOSEST_SOURCES = 3


@dataclass(frozen=True)
class ReduceLimits:
    """How much the reduce may keep and spend; the values live in the settings."""

    max_facts: int
    token_budget: int
    compress_calls: int
    max_llm_claims: int
    self_correct: bool

    @classmethod
    def from_settings(cls, settings: SynthesisSettings) -> ReduceLimits:
        return cls(
            max_facts=settings.narrator_max_facts,
            token_budget=settings.narrator_token_budget,
            compress_calls=settings.compress_max_calls,
            max_llm_claims=settings.verify_max_claims,
            self_correct=settings.self_correct,
        )


def sources_explored(candidates: list[Candidate]) -> list[SourcePreview]:
    seen: dict[str, SourcePreview] = {}
    for candidate in candidates:
        chunk = candidate.chunk
        if chunk.document_id not in seen:
            preview = " ".join(chunk.text.split())[:PREVIEW_CHARS]
            seen[chunk.document_id] = SourcePreview(
                title=chunk.title,
                source_uri=chunk.source_uri,
                preview=preview,
                kind=chunk.kind,
                space=chunk.space,
                document_date=chunk.document_date,
            )
    return list(seen.values())


def nothing_found(sources: list[SourcePreview]) -> str:
    """The plain "nothing found" answer, with the closest sources a reader may open instead."""
    if not sources:
        return NO_ANSWER
    closest = "\n".join(f"- {s.title} (`{s.source_uri}`)" for s in sources[:CLOSEST_SOURCES])
    return f"{NO_ANSWER} The closest sources found:\n\n{closest}"


def select_facts(
    state: RerankedQuestion, results: list[MapResult], limits: ReduceLimits, extractive: bool
) -> list[Fact]:
    by_chunk = {c.chunk.id: c for c in state.candidates}
    facts = [fact for result in results for fact in result.facts if fact.chunk_id in by_chunk]
    document_of = {chunk_id: c.chunk.document_id for chunk_id, c in by_chunk.items()}
    if extractive:
        return select_answer_facts(state.question, facts, document_of)[: limits.max_facts]
    return best_per_source(relevance_gate(facts), document_of)[: limits.max_facts]


def narrate(question: str, facts: list[Fact], llm: LLM | None) -> tuple[list[Claim], int, bool]:
    """Claims, sentences dropped, and whether the LLM wrote them (else the facts speak for themselves)."""
    if llm is not None and facts:
        try:
            claims, dropped = narrate_with_llm(question, facts, llm)
            return claims, dropped, True
        except LLMError:
            return narrate_extractively(facts), 1, False
    return narrate_extractively(facts), 0, False


def number_citations(
    kept: list[CheckedClaim], facts: list[Fact], by_chunk: dict[str, Candidate]
) -> tuple[dict[int, int], list[Citation]]:
    """Fact index → citation number, by first appearance, and the citations themselves, each with its
    passage's rank in ``by_chunk`` (built in the reranked order)."""
    numbers: dict[int, int] = {}
    for checked in kept:
        for index in checked.claim.facts:
            numbers.setdefault(index, len(numbers) + 1)
    rank = {chunk_id: position for position, chunk_id in enumerate(by_chunk, start=1)}
    citations = [
        cite(n, facts[i], by_chunk[facts[i].chunk_id], rank[facts[i].chunk_id]) for i, n in numbers.items()
    ]
    return numbers, citations


def relevance(outcome: RerankOutcome) -> Relevance:
    """What judged how well the passages answer: the cross-encoder when a model scored them."""
    if outcome.model is None or outcome.top_score is None:
        return Relevance(judge="retrieval")
    return Relevance(
        judge="cross-encoder", model=outcome.model, top_score=outcome.top_score, answerable=outcome.answerable
    )


def verdict(checked: CheckedClaim, numbers: dict[int, int]) -> Verdict:
    return Verdict(
        sentence=checked.claim.text,
        citations=[numbers[i] for i in checked.claim.facts if i in numbers],
        supported=checked.supported,
        score=round(checked.score, 3),
        method=checked.method,
        action=checked.action,
    )


def synthesize_answer(
    state: RerankedQuestion, results: list[MapResult], llm: LLM | None, limits: ReduceLimits
) -> tuple[Answer, ReduceData]:
    by_chunk = {c.chunk.id: c for c in state.candidates}
    refused = state.rerank.answerable is False  # the cross-encoder: no passage answers the question
    selected = [] if refused else select_facts(state, results, limits, extractive=llm is None)
    facts = compress(selected, limits.token_budget, llm, limits.compress_calls)
    claims, dropped, by_llm = narrate(state.question, facts, llm)
    verifier = Verifier(facts, by_chunk, llm, limits.max_llm_claims, limits.self_correct)
    checked = verifier.check(claims)
    if by_llm and not any(c.supported for c in checked):
        lexical = Verifier(facts, by_chunk, None, max_llm_claims=0, self_correct=False)
        checked += lexical.check(narrate_extractively(facts))
        by_llm = False
    kept = [c for c in checked if c.supported]
    numbers, citations = number_citations(kept, facts, by_chunk)
    sources = sources_explored(state.candidates)
    answer = Answer(
        question_id=state.question_id,
        question=state.question,
        markdown=render([c.claim for c in kept], numbers) if kept else nothing_found(sources),
        citations=citations,
        verdicts=[verdict(c, numbers) for c in checked],
        sources_explored=sources,
        mode="llm" if by_llm else "extractive",
        relevance=relevance(state.rerank),
    )
    report = ReduceData(
        skipped_entries=sum(r.skipped_entries for r in results),
        fallback_batches=sum(r.fell_back for r in results),
        dropped_sentences=dropped,
        removed_claims=sum(c.action == "removed" for c in checked),
        corrected_claims=sum(c.action == "corrected" for c in checked),
    )
    return answer, report
