"""Helpers for the Celery edges: sending a task by its topology name, and the question stages' wrapper."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from shared.celery_app import app
from shared.contracts import IndexRequest, QuestionState
from shared.events import fail_question
from shared.topology import INDEX_SCAN


def enqueue_index(request: IndexRequest) -> None:
    """Queue an ``index.scan`` of the request's folder (the gateway, the watcher, a finished scrape)."""
    app.signature(INDEX_SCAN, args=[request.to_payload()]).apply_async()


def question_stage(
    func: Callable[[QuestionState], QuestionState],
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Validate the incoming state, run the stage, and end the question's stream if it fails.

    Without the terminal failure event a reader of the stream would wait for an answer that the
    broken chain can no longer produce.
    """

    @functools.wraps(func)
    def wrapper(payload: dict[str, Any]) -> dict[str, Any]:
        state = QuestionState.model_validate(payload)
        try:
            return func(state).to_payload()
        except Exception as exc:
            fail_question(state.question_id, f"{func.__name__} failed: {type(exc).__name__}: {exc}")
            raise

    return wrapper
