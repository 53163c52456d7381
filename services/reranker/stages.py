"""The reranker's question stage as a plain function."""

from __future__ import annotations

from services.reranker.cutoff import describe
from services.reranker.service import Reranker
from shared.contracts import RerankedQuestion, SearchedQuestion
from shared.events import StageReport


def rerank(searched: SearchedQuestion, reranker: Reranker, report: StageReport) -> RerankedQuestion:
    """The candidates the cross-encoder keeps (logit at or above the threshold, else the fused top-k),
    best first; without a model, every candidate in fused order, and the stage reports it skipped."""
    kept, outcome = reranker.rerank(searched.question, searched.candidates)
    if outcome.model is None:
        report.status = "skipped"
    report.detail = describe(outcome)
    report.data = outcome
    return RerankedQuestion(**{**dict(searched), "candidates": kept}, rerank=outcome)
