"""The synthesizer's question stages as plain functions: split the reranked candidates into batches,
map each batch to facts (in parallel, one task per batch), reduce every batch's facts to the answer."""

from __future__ import annotations

from services.synthesizer.extractive import extract_facts
from services.synthesizer.llm_map import llm_extract_facts
from services.synthesizer.reduce import ReduceLimits, synthesize_answer
from shared.contracts import Answer, MapBatch, MapResult, RerankedQuestion
from shared.events import StageReport
from shared.interfaces import LLM, Embedder
from shared.settings import SynthesisSettings


def split_into_batches(reranked: RerankedQuestion, size: int) -> list[MapBatch]:
    """The candidates in order, ``size`` to a batch: one map task each."""
    candidates = reranked.candidates
    return [
        MapBatch(
            question_id=reranked.question_id,
            question=reranked.question,
            batch_index=index,
            candidates=candidates[start : start + size],
            first_rank=start,
        )
        for index, start in enumerate(range(0, len(candidates), size))
    ]


def map_batch(
    batch: MapBatch, llm: LLM | None, embedder: Embedder | None, settings: SynthesisSettings
) -> MapResult:
    """The facts of one batch, each with the exact quote it rests on: the LLM's, or without one the
    best-scoring whole sentences (scored with ``embedder``)."""
    if llm is None:
        return extract_facts(batch, embedder)
    return llm_extract_facts(batch, llm, settings.map_passage_chars, settings.map_max_facts)


def reduce(
    reranked: RerankedQuestion,
    results: list[MapResult],
    llm: LLM | None,
    limits: ReduceLimits,
    report: StageReport,
) -> Answer:
    """Every batch's facts to one answer whose ``[n]`` markers cite exact passages."""
    answer, reduced = synthesize_answer(reranked, results, llm, limits)
    found = sum(c.verified for c in answer.citations)
    kept = sum(v.supported for v in answer.verdicts)
    report.detail = (
        f"{len(answer.citations)} citations, {found} quotes found in their files; "
        f"{kept}/{len(answer.verdicts)} sentences kept after checking them against their quotes"
    )
    report.data = reduced
    return answer
