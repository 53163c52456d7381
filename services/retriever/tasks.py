"""Celery edge of the retriever: ``retrieve.plan`` then ``retrieve.search``."""

from __future__ import annotations

from services.retriever.planner import rule_based_plan
from services.retriever.search import search_candidates
from shared.backends import get_embedder, get_store
from shared.celery_app import app
from shared.contracts import QuestionState
from shared.events import EventStream
from shared.settings import get_settings
from shared.tasking import question_stage


@question_stage
def plan_question(state: QuestionState) -> QuestionState:
    with EventStream(state.question_id).stage("plan") as stage:
        plan = rule_based_plan(state.question)
        if state.options.strategy is not None:
            plan.strategy = state.options.strategy
        stage.detail = (
            f"{plan.strategy.value}: {len(plan.variations)} variation(s), keywords {plan.hard_keywords}"
        )
        stage.data = {"plan": plan.to_payload()}
    state.plan = plan
    state.timings_ms["plan"] = stage.elapsed_ms
    return state


@question_stage
def search_question(state: QuestionState) -> QuestionState:
    settings = get_settings()
    plan = state.plan or rule_based_plan(state.question)
    with EventStream(state.question_id).stage("search") as stage:
        candidates, leg_counts = search_candidates(
            plan,
            get_store(),
            get_embedder(),
            pool=settings.pool_size(plan.strategy),
            keep=settings.rerank_inputs(plan.strategy),
            filters=state.options.filters,
            rrf_k=settings.rrf_k,
        )
        stage.detail = f"{len(candidates)} candidates fused from " + ", ".join(
            f"{leg} {count}" for leg, count in leg_counts.items()
        )
        stage.data = {"legs": leg_counts, "candidates": len(candidates)}
    state.candidates = candidates
    state.timings_ms["search"] = stage.elapsed_ms
    return state


app.task(name="retrieve.plan")(plan_question)
app.task(name="retrieve.search")(search_question)
