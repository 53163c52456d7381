"""Celery edge of the retriever: the plan and search stages of a question, and the search-only query."""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Any

from celery.signals import worker_process_init

from services.retriever.keywords import StoreIdf
from services.retriever.modes import run_search
from services.retriever.search import RetrievalConfig, Retriever
from services.retriever.stages import build_retriever, plan, search
from shared.backends import get_embedder, get_llm, get_store
from shared.celery_app import app
from shared.contracts import PlannedQuestion, Question, SearchedQuestion, SearchRequest, Strategy
from shared.events import StageReport
from shared.settings import get_settings
from shared.tasking import question_task
from shared.topology import RETRIEVE_PLAN, RETRIEVE_QUERY, RETRIEVE_SEARCH

log = logging.getLogger(__name__)


@lru_cache(maxsize=1)
def retriever() -> Retriever:
    """The process's retriever, built once."""
    return build_retriever(get_store(), get_embedder(), get_llm(), get_settings().retrieval)


@worker_process_init.connect
def _load_retriever(**_: Any) -> None:
    """A worker process loads its store, embedder and chat model before its first question, so the
    first stage does not spend its time limit loading them."""
    try:
        retriever()
    except Exception:  # the first task reports it to its question; the worker must still start
        log.exception("the retriever did not load")


@question_task(RETRIEVE_PLAN)
def plan_question(question: Question, report: StageReport) -> PlannedQuestion:
    return plan(question, get_llm(), StoreIdf(get_store()), get_settings().retrieval, report)


@question_task(RETRIEVE_SEARCH)
def search_question(planned: PlannedQuestion, report: StageReport) -> SearchedQuestion:
    return search(planned, retriever(), get_settings().retrieval, report)


@app.task(name=RETRIEVE_QUERY)
def query(payload: dict[str, Any]) -> dict[str, Any]:
    """Ranked passages for a search request, without synthesis."""
    request = SearchRequest.model_validate(payload)
    settings = get_settings()
    base = RetrievalConfig.from_settings(settings.retrieval, Strategy.PRECISE)
    return run_search(request, retriever(), base, settings.retrieval.exact_max_keywords).to_payload()
