"""Celery edge of the retriever: ``retrieve.plan``, ``retrieve.search`` and ``retrieve.query``."""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Any

from services.retriever.exact import ExactSearcher, RipgrepMissingError, find_rg
from services.retriever.keywords import StoreIdf
from services.retriever.modes import run_search
from services.retriever.planner import make_plan
from services.retriever.search import RetrievalConfig, Retriever
from shared.backends import get_embedder, get_llm, get_store
from shared.celery_app import app
from shared.contracts import QuestionState, SearchRequest, Strategy
from shared.events import EventStream
from shared.settings import get_settings
from shared.tasking import question_stage
from shared.topology import RETRIEVE_PLAN, RETRIEVE_QUERY, RETRIEVE_SEARCH

log = logging.getLogger(__name__)


@lru_cache(maxsize=1)
def retriever() -> Retriever:
    """The process's retriever; without ripgrep the exact leg is reported missing, not fatal."""
    settings = get_settings()
    try:
        exact = ExactSearcher(get_store(), find_rg(settings.rg_path))
    except RipgrepMissingError as exc:
        log.warning("%s", exc)
        exact = None
    return Retriever(get_store(), get_embedder(), exact, get_llm())


@question_stage
def plan_question(state: QuestionState) -> QuestionState:
    settings = get_settings()
    with EventStream(state.question_id).stage("plan") as stage:
        outcome = make_plan(
            state.question,
            get_llm(),
            timeout_s=settings.planner_timeout_s,
            max_tokens=settings.planner_max_tokens,
            max_keywords=settings.exact_max_keywords,
            idf=StoreIdf(get_store()),
        )
        if state.options.strategy is not None:
            outcome.plan.strategy = state.options.strategy
        stage.detail = outcome.describe()
        stage.data = {"plan": outcome.plan.to_payload(), "fallback_reason": outcome.fallback_reason}
    state.plan = outcome.plan
    state.timings_ms["plan"] = stage.elapsed_ms
    return state


@question_stage
def search_question(state: QuestionState) -> QuestionState:
    if state.plan is None:
        raise ValueError(f"{RETRIEVE_SEARCH} needs the plan from {RETRIEVE_PLAN}")
    config = RetrievalConfig.from_settings(
        get_settings(), state.plan.strategy, state.options.hyde_mode, state.options.k_adjacent or None
    )
    with EventStream(state.question_id).stage("search") as stage:
        candidates, report = retriever().search(state.plan, config, state.options.filters)
        stage.detail = report.describe(len(candidates))
        stage.data = {**report.data(), "candidates": len(candidates)}
    state.candidates = candidates
    state.timings_ms["search"] = stage.elapsed_ms
    return state


def query(payload: dict[str, Any]) -> dict[str, Any]:
    """Ranked passages for a search request, without synthesis."""
    request = SearchRequest.model_validate(payload)
    settings = get_settings()
    base = RetrievalConfig.from_settings(settings, Strategy.PRECISE)
    return run_search(request, retriever(), base, settings.exact_max_keywords).to_payload()


app.task(name=RETRIEVE_PLAN)(plan_question)
app.task(name=RETRIEVE_SEARCH)(search_question)
app.task(name=RETRIEVE_QUERY)(query)
