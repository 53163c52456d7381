"""The gateway's Celery edge: it sends tasks by their topology names and imports no service code."""

from __future__ import annotations

from celery import chain

from shared.celery_app import app
from shared.contracts import Question, SearchRequest, SearchResponse
from shared.topology import QUESTION_CHAIN, RETRIEVE_QUERY


def start_question(question: Question) -> None:
    """The question chain of ``shared.topology``; each stage passes its result to the next."""
    first, *rest = QUESTION_CHAIN
    signatures = [app.signature(first, args=[question.to_payload()])]
    signatures += [app.signature(name) for name in rest]
    chain(*signatures).apply_async(task_id=f"{question.question_id}:chain")


def run_search(request: SearchRequest, timeout_s: float) -> SearchResponse:
    """The retriever's ranked passages; Celery's ``TimeoutError`` when none came within ``timeout_s``."""
    result = app.signature(RETRIEVE_QUERY, args=[request.to_payload()]).apply_async()
    try:
        return SearchResponse.model_validate(result.get(timeout=timeout_s))
    finally:
        result.forget()
