"""The gateway's Celery edge: it sends tasks by their topology names and imports no service code."""

from __future__ import annotations

from celery import chain

from shared.celery_app import app
from shared.contracts import LibraryCheck, Question, SearchRequest, SearchResponse
from shared.topology import QUESTION_CHAIN, RETRIEVE_QUERY, SCRAPE_LIBRARY_CHECK


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


def run_library_check(timeout_s: float) -> LibraryCheck:
    """The scrape worker's reading of the Perplexity export folder; Celery's ``TimeoutError`` when it
    did not come within ``timeout_s`` (the worker is busy with a scrape)."""
    result = app.signature(SCRAPE_LIBRARY_CHECK).apply_async()
    try:
        return LibraryCheck.model_validate(result.get(timeout=timeout_s))
    finally:
        result.forget()
