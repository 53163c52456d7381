"""The retriever's two question stages as plain functions: plan, then search.

Each takes the contract the previous stage gave and returns the next one; ``report`` receives what
the stage did, for its event (``tasks.py`` streams it; the in-process pipeline drops it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from services.retriever.exact import ExactSearcher, RipgrepMissingError, find_rg
from services.retriever.followup import Standalone, standalone_question
from services.retriever.planner import make_plan
from services.retriever.search import RetrievalConfig, Retriever
from shared.contracts import PlannedQuestion, Question, SearchedQuestion
from shared.events import StageReport
from shared.interfaces import LLM, Embedder, VectorStore
from shared.settings import RetrievalSettings
from shared.stage_events import HydeData, PlanData, SearchData

log = logging.getLogger(__name__)


def build_retriever(
    store: VectorStore, embedder: Embedder, llm: LLM | None, settings: RetrievalSettings
) -> Retriever:
    """The retriever a process builds once; without ripgrep the exact leg is reported missing, not fatal."""
    try:
        exact: ExactSearcher | None = ExactSearcher(store, find_rg(settings.rg_path))
    except RipgrepMissingError as exc:
        log.warning("%s", exc)
        exact = None
    return Retriever(store, embedder, exact, llm)


def plan(
    question: Question,
    llm: LLM | None,
    idf: Callable[[str], float] | None,
    settings: RetrievalSettings,
    report: StageReport,
) -> PlannedQuestion:
    """What to search for: the LLM's plan within the planner's timeout, else the rules' plan; the
    user's strategy, when given, overrides the planner's. A follow-up is first made standalone (see
    :mod:`services.retriever.followup`): the stages after this one work on that question."""
    standalone = standalone_question(
        question.question,
        question.history,
        llm,
        timeout_s=settings.planner_timeout_s,
        max_tokens=settings.planner_max_tokens,
    )
    outcome = make_plan(
        standalone.question,
        llm,
        timeout_s=settings.planner_timeout_s,
        max_tokens=settings.planner_max_tokens,
        max_keywords=settings.exact_max_keywords,
        idf=idf,
    )
    if question.options.strategy is not None:
        outcome.plan.strategy = question.options.strategy
    if standalone.rewritten_by is not None:
        outcome.plan.follow_up = question.question
        outcome.plan.rewritten_by = standalone.rewritten_by
    report.detail = searched_for(standalone) + outcome.describe()
    report.data = PlanData(
        plan=outcome.plan,
        fallback_reason=outcome.fallback_reason or standalone.fallback_reason,
        searched_for=standalone.question,
    )
    return PlannedQuestion(**{**dict(question), "question": standalone.question}, plan=outcome.plan)


def searched_for(standalone: Standalone) -> str:
    """What the plan's event says of a follow-up's rewrite (nothing for a question asked alone)."""
    if standalone.rewritten_by is None:
        return ""
    fell_back = f", the LLM's failed: {standalone.fallback_reason}" if standalone.fallback_reason else ""
    return f"follow-up searched for {standalone.question!r} ({standalone.rewritten_by}{fell_back}); "


def search(
    planned: PlannedQuestion, retriever: Retriever, settings: RetrievalSettings, report: StageReport
) -> SearchedQuestion:
    """Every leg of the plan, fused and cut to the reranker's inputs for the plan's strategy."""
    options = planned.options
    config = RetrievalConfig.from_settings(
        settings, planned.plan.strategy, options.hyde_mode, options.k_adjacent or None
    )
    candidates, found = retriever.search(planned.plan, config, options.filters)
    report.detail = found.describe(len(candidates))
    report.data = SearchData(
        legs=found.legs,
        hyde=HydeData(ran=found.hyde.run, reason=found.hyde.reason),
        fusion=found.fusion,
        notes=found.notes,
        candidates=len(candidates),
    )
    return SearchedQuestion(**dict(planned), candidates=candidates)
