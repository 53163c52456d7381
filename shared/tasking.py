"""Helpers for the Celery edge of the question path."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from shared.contracts import QuestionState
from shared.events import fail_question


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
