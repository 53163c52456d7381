"""The Celery edges' common parts: sending a task by its topology name, and registering a question stage.

A question stage is a plain function ``(stage input, report) -> next stage's input``; ``question_task``
makes it a Celery task that validates the payload as the function's input type, runs it inside the
question's event stage, records its time, and returns the next payload. The function never sees JSON.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, get_type_hints

from celery import Task
from celery.exceptions import Ignore

from shared.celery_app import app
from shared.contracts import IndexRequest, Question
from shared.events import EventStream, StageReport, cancelled_key, fail_question, redis_client
from shared.topology import INDEX_SCAN

In = TypeVar("In", bound=Question)
Out = TypeVar("Out", bound=Question)
Stage = Callable[[In, StageReport], Out]


def enqueue_index(request: IndexRequest) -> None:
    """Queue an index scan of the request's folder (the gateway, the watcher, a finished scrape)."""
    app.signature(INDEX_SCAN, args=[request.to_payload()]).apply_async()


def input_type(stage: Callable[..., Any]) -> type[Question]:
    """The contract a stage takes: the annotation of its first parameter."""
    first = next(iter(inspect.signature(stage).parameters))
    taken = get_type_hints(stage)[first]
    if not (isinstance(taken, type) and issubclass(taken, Question)):
        raise TypeError(f"{stage.__qualname__} must take a Question contract first, not {taken!r}")
    return taken


def question_task(name: str, event: str) -> Callable[[Stage[In, Out]], Task]:
    """Register ``stage`` as the Celery task ``name``, reported as the ``event`` stage of the question.

    A failure ends the question's stream, so no reader waits for an answer the broken chain can no
    longer produce; a cancelled question's stage does not run, and the chain stops there.
    """

    def register(stage: Stage[In, Out]) -> Task:
        takes = input_type(stage)

        @functools.wraps(stage)
        def run(payload: dict[str, Any]) -> dict[str, Any]:
            question = takes.model_validate(payload)
            if redis_client().exists(cancelled_key(question.question_id)):
                raise Ignore()  # cancelled by its asker: this stage and the rest of the chain are skipped
            try:
                with EventStream(question.question_id).stage(event) as report:
                    result = stage(question, report)  # type: ignore[arg-type]
            except Exception as exc:
                fail_question(question.question_id, f"{event} failed: {type(exc).__name__}: {exc}")
                raise
            result.timings_ms[event] = report.elapsed_ms
            return result.to_payload()

        return app.task(name=name)(run)  # type: ignore[no-any-return]

    return register
